"""Talking to the warm daemon: where its socket is, the wire format, the client.

Standard library only (and :mod:`gitmem.storage.locate`): a ``git edda
search`` or a hook call that the daemon answers imports nothing heavy. The
daemon itself is :mod:`gitmem.daemon`.
"""
