from pathlib import Path

from dupes.finder import duplicate_groups


def test_same_content_is_grouped_and_small_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"x" * 5000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.bin").write_bytes(b"x" * 5000)
    (tmp_path / "c.bin").write_bytes(b"y" * 5000)
    (tmp_path / "tiny1").write_bytes(b"z")
    (tmp_path / "tiny2").write_bytes(b"z")
    groups = duplicate_groups(tmp_path, min_size=4096, algorithm="sha1")
    assert groups == [[tmp_path / "a.bin", tmp_path / "sub" / "b.bin"]]
