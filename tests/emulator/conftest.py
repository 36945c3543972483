"""Unit tests of the emulator's own parts (config, broker state, AMQP bytes), no sockets.

They need python-qpid-proton, like the emulator; each module skips itself without it.
"""
