"""Images a request attaches: `@shot.png` in the project, or a pasted path to an image file.

An image is known by its first bytes (PNG, JPEG, GIF and WebP signatures), never by its
name: `notes.png` that holds text is no image, and a screenshot saved as `shot` is one. The
name's suffix only picks out a pasted path worth looking at. Each image is at most
`MAX_IMAGE_BYTES` (the smallest limit of the APIs tether speaks: Anthropic's 5 MB per image).
A mention names a file inside the project, as `@file` does; a path the user pasted (a file
dragged into the terminal, a screenshot's path) may be anywhere, since only an image file
is taken from it.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.messages import Image
from ..host import TooLarge, is_within, open_regular, read_at_most

MAX_IMAGE_BYTES = 5 * 1024 * 1024
SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
"""Leading bytes and the MIME type they mean (WebP, a RIFF container, is told apart below)."""
SIGNATURE_BYTES = 12
_SUFFIX = r"\.(?:png|jpe?g|gif|webp)"
PASTED_PATH = re.compile(
    rf"'([^'\n]+{_SUFFIX})'"  # a quoted path, as terminals paste one with spaces
    rf"|\"([^\"\n]+{_SUFFIX})\""
    rf"|(?<![\w@])((?:~|\.{{0,2}})/(?:\\ |[^\s'\"])+{_SUFFIX})(?![\w.])",  # /a/b.png, ~/x\ y.png
    re.IGNORECASE,
)
MENTIONED = re.compile(rf"(?<![\w@])@([\w./~-]+{_SUFFIX})(?![\w.])", re.IGNORECASE)


def image_mime(head: bytes) -> str | None:
    """The MIME type the first bytes of a file show, None for anything but the four kinds."""
    for signature, mime in SIGNATURES:
        if head.startswith(signature):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


class NotAnImage(ValueError):
    """A file named as an image that cannot be attached as one (the message says why)."""


def read_image(path: Path, shown: str) -> Image:
    """The file as an Image; NotAnImage (naming it `shown`) when it is none or too large."""
    try:
        with open_regular(path) as handle:
            data = read_at_most(handle, path, MAX_IMAGE_BYTES)
    except TooLarge:
        raise NotAnImage(f"{shown} is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB; "
                         "attach a smaller image") from None
    except OSError as exc:
        raise NotAnImage(f"{shown} could not be read: {exc.strerror or exc}") from None
    mime = image_mime(data[:SIGNATURE_BYTES])
    if mime is None:
        raise NotAnImage(f"{shown} is not a PNG, JPEG, GIF or WebP image (by its first bytes)")
    return Image(mime, base64.b64encode(data).decode("ascii"))


@dataclass
class AttachedImages:
    images: list[Image] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    """Each image as the user named it, with its type and size, for the line saying so."""
    problems: list[str] = field(default_factory=list)
    """Why an image the request names was not attached."""


def named_images(text: str, root: Path) -> list[tuple[str, Path]]:
    """(as written, path) of each image the text mentions inside `root` or pastes a path of."""
    found: list[tuple[str, Path]] = []
    for match in MENTIONED.finditer(text):
        path = (root / match.group(1)).resolve()
        if is_within(str(path), str(root.resolve())):
            found.append((match.group(1), path))
    for match in PASTED_PATH.finditer(text):
        written = next(group for group in match.groups() if group)
        path = Path(written.replace("\\ ", " ")).expanduser()
        found.append((written, (root / path).resolve()))
    unique: dict[Path, str] = {}
    for name, path in found:
        if path.is_file():
            unique.setdefault(path, name)
    return [(name, path) for path, name in unique.items()]


def attach_images(text: str, root: Path) -> AttachedImages:
    """The images `text` names, read; what could not be attached, said."""
    attached = AttachedImages()
    for name, path in named_images(text, root):
        try:
            image = read_image(path, name)
        except NotAnImage as exc:
            attached.problems.append(str(exc))
            continue
        attached.images.append(image)
        size = len(image.data) * 3 // 4 - image.data[-2:].count("=")  # the bytes base64 holds
        attached.names.append(f"{name} ({image.mime}, {size:,} bytes)")
    return attached


def is_image_file(path: Path) -> bool:
    """Whether the file's first bytes are an image's (a text attachment skips it)."""
    try:
        with open_regular(path) as handle:
            return image_mime(handle.read(SIGNATURE_BYTES)) is not None
    except OSError:
        return False
