"""deploy/services.yaml: services.worker.replicas is 5; every other value and the comment as before."""

import yaml
from checklib import fail, load_yaml, original_text, passed, text

doc = load_yaml("deploy/services.yaml")
try:
    replicas = doc["services"]["worker"]["replicas"]
except (KeyError, TypeError):
    fail("deploy/services.yaml has no services.worker.replicas any more")
if isinstance(replicas, bool) or replicas != 5 or not isinstance(replicas, int):
    fail(f"services.worker.replicas should be the number 5, it is {replicas!r}")
expected = yaml.safe_load(original_text("deploy/services.yaml"))
expected["services"]["worker"]["replicas"] = 5
if doc != expected:
    fail("something besides the worker's replicas changed in deploy/services.yaml")
if not text("deploy/services.yaml").startswith("# Services of the shop backend."):
    fail("the comment at the top of deploy/services.yaml is gone")
passed()
