def title_case(text: str) -> str:
    return " ".join(word.capitalize() for word in text.split())


def truncate(text: str, width: int, marker: str = "...") -> str:
    if len(text) <= width:
        return text
    return text[: max(0, width - len(marker))] + marker
