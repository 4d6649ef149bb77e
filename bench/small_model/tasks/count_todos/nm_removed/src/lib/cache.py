_store = {}


def get(key):
    """Return the cached value."""
    return _store.get(key)


def put(key, value):
    _store[key] = value
