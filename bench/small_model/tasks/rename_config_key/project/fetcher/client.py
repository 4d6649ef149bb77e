class Client:
    def __init__(self, settings: dict) -> None:
        self.base_url = settings["base_url"]
        self.retries = settings["retries"]
        self.timeout_s = settings["timeout_s"]

    def plan(self, path: str) -> str:
        return f"GET {self.base_url}{path} (up to {self.retries} retries, {self.timeout_s} s each)"
