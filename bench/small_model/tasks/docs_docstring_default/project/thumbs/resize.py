"""How big a thumbnail is and what its file is called."""

from __future__ import annotations

import math
from pathlib import PurePath


def thumbnail_size(width: int, height: int, *, max_side: int = 320, upscale: bool = False,
                   rounding: str = "floor") -> tuple[int, int]:
    """The size of the thumbnail of a width x height image, keeping its proportions.

    Args:
        width: the image's width in pixels.
        height: the image's height in pixels.
        max_side: the thumbnail's longest side in pixels (default 256).
        upscale: whether an image smaller than max_side is enlarged (default False).
        rounding: "floor" or "nearest", how a fractional side is rounded (default "floor").
    """
    if width <= 0 or height <= 0:
        raise ValueError(f"not an image size: {width}x{height}")
    scale = max_side / max(width, height)
    if scale >= 1 and not upscale:
        return width, height
    round_side = math.floor if rounding == "floor" else round
    return max(1, round_side(width * scale)), max(1, round_side(height * scale))


def thumbnail_name(image: str, *, suffix: str = "_thumb", extension: str = ".webp") -> str:
    """The thumbnail's file name, beside the image.

    Args:
        image: the image's path.
        suffix: added to the image's stem (default "_thumb").
        extension: the thumbnail's file type (default ".webp").
    """
    path = PurePath(image)
    return str(path.with_name(f"{path.stem}{suffix}{extension}"))
