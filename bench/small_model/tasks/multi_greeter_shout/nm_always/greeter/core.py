def make_greeting(name: str, shout: bool = False) -> str:
    return f"Hello, {name}!".upper()
