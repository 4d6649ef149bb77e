import json

from app.config import load_config


def test_defaults_fill_what_the_file_leaves_out(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"workers": 5}))
    assert load_config(path) == {"name": "app", "workers": 5, "debug": False}
