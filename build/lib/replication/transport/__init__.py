"""Everything that imports the Azure SDKs: converters, senders and error translation.

No other package of this project imports ``azure.servicebus`` or ``azure.eventhub``; patterns
stay pure and testable without a network.
"""
