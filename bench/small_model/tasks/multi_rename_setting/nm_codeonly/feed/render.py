from .settings import ROOT


def render(settings):
    items = (ROOT / settings["source"]).read_text().splitlines()
    shown = items[: settings.get("item_limit", 10)]
    return "\n".join([f"== {settings['title']} ==", *shown])
