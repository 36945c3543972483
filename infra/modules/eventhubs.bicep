// One Event Hubs namespace with its event hubs and consumer groups (rendered parameters).
@description('Namespace: name, location, sku, eventHubs, consumerGroups.')
param namespace object

resource eventHubs 'Microsoft.EventHub/namespaces@2024-01-01' = {
  name: namespace.name
  location: namespace.location
  sku: {
    name: namespace.sku
    tier: namespace.sku
    capacity: 1
  }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
  }
}

resource hubs 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' = [for hub in namespace.eventHubs: {
  parent: eventHubs
  name: hub.name
  properties: {
    partitionCount: hub.partitionCount
    messageRetentionInDays: hub.messageRetentionInDays
  }
}]

resource consumerGroups 'Microsoft.EventHub/namespaces/eventhubs/consumergroups@2024-01-01' = [for group in namespace.consumerGroups: {
  name: '${namespace.name}/${group.eventHub}/${group.name}'
  properties: {}
  dependsOn: [
    hubs
  ]
}]

output id string = eventHubs.id
