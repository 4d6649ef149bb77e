def make_greeting(name: str) -> str:
    return f"Hello, {name}!"
