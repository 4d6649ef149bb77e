import json

from app.config import load_cfg


def test_defaults_fill_what_the_file_leaves_out(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"workers": 5}))
    assert load_cfg(path) == {"name": "app", "workers": 5, "debug": False}
