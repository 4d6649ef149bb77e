from .server import serve

serve()
