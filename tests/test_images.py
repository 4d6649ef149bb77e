"""Images in requests: found by their bytes, bounded, sent in each provider's own wire form
(checked against the fake servers' recorded request JSON), refused before sending to a model
that does not take them, and kept in a saved session."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args

from tether.core.messages import Image, Message, Text
from tether.core.model_table import load_model_table
from tether.core.toolspec import ToolTable
from tether.engine.images import MAX_IMAGE_BYTES, NotAnImage, attach_images, image_mime, read_image
from tether.protocol.history import render_history_as_text
from tether.providers import anthropic, gemini, ollama, openai
from tether.providers.base import RequestOptions
from tether.providers.images import takes_images
from tether.store.session import SessionRecord, render_markdown
from tether.ui.terminal.prompt import expand_mentions

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01"
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00"
PNG_B64 = base64.b64encode(PNG).decode()
CHAT = "/v1/chat/completions"


def with_image(text: str = "What is in this picture?") -> list[Message]:
    return [Message("user", [Text(text), Image("image/png", PNG_B64)])]


# ---------------------------------------------------------------- finding and reading


@pytest.mark.parametrize(("data", "mime"), [(PNG, "image/png"), (JPEG, "image/jpeg"),
                                            (GIF, "image/gif"), (WEBP, "image/webp"),
                                            (b"hello, not an image", None)])
def test_the_type_comes_from_the_bytes(data: bytes, mime: str | None) -> None:
    assert image_mime(data) == mime


def test_a_name_that_lies_is_read_by_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "photo.jpg").write_bytes(PNG)  # a PNG saved as .jpg
    (tmp_path / "notes.png").write_text("just text")
    found = attach_images("compare @photo.jpg with @notes.png", tmp_path)
    assert found.images == [Image("image/png", PNG_B64)]
    assert found.names == [f"photo.jpg (image/png, {len(PNG)} bytes)"]
    assert found.problems == ["notes.png is not a PNG, JPEG, GIF or WebP image (by its first bytes)"]


def test_a_pasted_path_attaches_an_image_from_anywhere(tmp_path: Path) -> None:
    shots = tmp_path / "Screen Shots"
    shots.mkdir()
    (shots / "my shot.png").write_bytes(PNG)
    (tmp_path / "b.gif").write_bytes(GIF)
    project = tmp_path / "project"
    project.mkdir()
    text = f"why is this red? '{shots}/my shot.png' and {tmp_path}/b.gif"
    found = attach_images(text, project)
    assert [i.mime for i in found.images] == ["image/png", "image/gif"]
    escaped = f"{shots}/my shot.png".replace(" ", "\\ ")
    assert len(attach_images(f"see {escaped}", project).images) == 1  # as a terminal pastes it


def test_mentions_stay_inside_the_project_and_big_images_are_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "outside.png").write_bytes(PNG)
    assert not attach_images("@../outside.png", project).images
    (project / "huge.png").write_bytes(PNG + b"\0" * MAX_IMAGE_BYTES)
    with pytest.raises(NotAnImage, match="larger than 5 MB"):
        read_image(project / "huge.png", "huge.png")


def test_an_image_is_not_attached_as_text(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    text, attached = expand_mentions("look at @shot.png", tmp_path)
    assert text == "look at @shot.png" and attached == []


def test_the_table_says_which_models_take_images() -> None:
    assert takes_images("openai", "gpt-4o-mini") and takes_images("anthropic", "claude-sonnet-4-5")
    assert takes_images("gemini", "gemini-2.5-flash") and takes_images("ollama", "llava:7b")
    assert not takes_images("openai", "gpt-3.5-turbo") and not takes_images("ollama", "qwen2.5-coder:7b")
    assert not takes_images("local", "anything") and not takes_images("local", "llava:7b")
    assert takes_images("openai", "my-own-vlm", "on") and not takes_images("openai", "gpt-4o", "off")


@pytest.mark.parametrize(("model", "takes"), [
    ("qwen3-vl:8b", True), ("qwen3:8b", False),  # the vision row wins over its family's
    ("gemma3:4b", True), ("gemma3:1b", False), ("o3", True), ("o3-mini", False),
    ("mistral-small3.1:24b", True), ("mistral-small:24b", False), ("openai/gpt-4o", True),
])
def test_image_support_is_a_field_of_the_model_table(model: str, takes: bool) -> None:
    assert takes_images("openai", model) is takes


def test_the_users_model_table_can_say_a_model_takes_images(tmp_path: Path) -> None:
    (tmp_path / "models.toml").write_text('[[model]]\nmatch = "my-pictures"\nimages = true\n')
    table = load_model_table(tmp_path)
    assert takes_images("openai", "my-pictures:7b", table=table)
    assert not takes_images("openai", "my-pictures:7b")  # the built-in table alone does not know it


# ---------------------------------------------------------------- the wire, per provider


async def sent_body(server: FakeServer, provider: object, path: str, model: str) -> dict:
    server.add(Reply(text="A red square."))
    async for _ in provider.stream(with_image(), None, RequestOptions(model)):  # type: ignore[attr-defined]
        pass
    await provider.aclose()  # type: ignore[attr-defined]
    [(sent_path, body)] = server.requests[-1:]
    assert sent_path == path
    return body


async def test_openai_sends_an_image_url_part_with_a_data_url(fake_server: FakeServer) -> None:
    body = await sent_body(fake_server, openai.OpenAIProvider(fake_server.url + "/v1"), CHAT, "gpt-4o")
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
    ]}]


async def test_anthropic_sends_a_base64_image_block(fake_server: FakeServer) -> None:
    provider = anthropic.AnthropicProvider(fake_server.url, api_key="sk-ant-test")
    body = await sent_body(fake_server, provider, "/v1/messages", "claude-sonnet-4-5")
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
         "cache_control": {"type": "ephemeral"}},  # the conversation's end, marked for the cache
    ]}]


async def test_gemini_sends_inline_data(fake_server: FakeServer) -> None:
    provider = gemini.GeminiProvider(fake_server.url, api_key="AIza-test")
    body = await sent_body(fake_server, provider,
                           "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "gemini-2.5-flash")
    assert body["contents"] == [{"role": "user", "parts": [
        {"text": "What is in this picture?"},
        {"inline_data": {"mime_type": "image/png", "data": PNG_B64}},
    ]}]


async def test_ollama_sends_images_on_the_message(fake_server: FakeServer) -> None:
    body = await sent_body(fake_server, ollama.OllamaProvider(fake_server.url), "/api/chat", "llava")
    assert body["messages"] == [{"role": "user", "content": "What is in this picture?",
                                 "images": [PNG_B64]}]


def test_the_text_protocol_keeps_the_image_and_a_session_keeps_it_too() -> None:
    history = [Message.user("first"), *with_image("then this")]
    [merged] = render_history_as_text(history, ToolTable([]))
    assert merged.text == "first\n\nthen this" and merged.images == [Image("image/png", PNG_B64)]
    saved = json.loads(json.dumps([m.to_dict() for m in history]))
    assert [Message.from_dict(m) for m in saved] == history
    record = SessionRecord("s1", "", "/p", 0.0, 0.0, "openai", "gpt-4o", messages=history)
    transcript = render_markdown(record)
    assert "*[attached image: image/png," in transcript and PNG_B64 not in transcript


# ---------------------------------------------------------------- the chat


def test_the_chat_refuses_images_for_a_model_without_them_and_keeps_the_line(
        tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "shot.png").write_bytes(PNG)
    with FakeServer([Reply(text="never asked")]) as server, \
            PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("what is wrong in @shot.png?")
        app.wait_for_text("is not known to take images, so nothing was sent")
        app.wait_for_prompt()
        assert app.cursor_line().startswith("› what is wrong in @shot.png?")  # nothing lost
        assert "attached" not in app.text_since_line()
        app.send("\x15")  # Ctrl-U empties the input line, so Ctrl-D leaves
        app.ctrl_d()
        assert app.wait_exit() == 0
        assert not server.bodies(CHAT)


def test_the_chat_sends_the_image_to_a_model_that_takes_it(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "shot.png").write_bytes(PNG)
    with FakeServer([Reply(text="A one-pixel PNG.")], models=["gpt-4o"]) as server, PtyApp(
            ["--provider", "openai", "--base-url", server.url + "/v1", "--model", "gpt-4o"],
            cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("what is in @shot.png?")
        app.wait_for_text("A one-pixel PNG.")
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
        screen = app.text()
        [body] = [b for b in server.bodies(CHAT) if "Write a short title" not in json.dumps(b)]
    assert f"attached shot.png (image/png, {len(PNG)} bytes)" in screen
    text, image = body["messages"][-1]["content"]
    assert text["type"] == "text" and text["text"].endswith("# Request\nwhat is in @shot.png?")
    assert image == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}}
