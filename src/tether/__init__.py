"""tether: a terminal AI assistant that does real work on your machine."""

__version__ = "0.1.0"
