"""Issue 45 (moving upstream's audio and video projects over) in a real browser, under gunicorn: an
item's ``type: audio`` and ``type: video`` fields in the browser's own player at 390 and 1280 px. A
sound made by the test (a WAV under media_directory) loads and can be played; the media route sends it
as audio, and a video as video; the page's policy lets sound and video come from https too, as
upstream's examples name them, and from nowhere else; nothing in the item runs."""

from __future__ import annotations

import io
import json
import math
import struct
import urllib.request
import wave
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.harness.pages import becomes, sign_in
from tests.harness.servers import ServerProcess

pytestmark = [pytest.mark.browser, pytest.mark.integration]
HOSTILE = '<script>window.__pwned=1</script><svg onload="window.__pwned=1"></svg>'
FIELDS = [{"key": "audio_url", "type": "audio", "label": "Audio Sample", "display_options": {"controls": True}},
          {"key": "video_url", "type": "video", "label": "Video Clip", "display_options": {"max_width": 320, "loop": True}},
          {"key": "text", "type": "text", "label": "Description"}]


def tone(seconds: float = 0.5, rate: int = 8000) -> bytes:
    """A WAV file of a 440 Hz tone."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * n / rate)))
                               for n in range(int(seconds * rate))))
    return out.getvalue()


@pytest.fixture
def server(make_project: Callable[..., Path]) -> Iterator[ServerProcess]:
    path = make_project(n_items=1, instance_display={"fields": FIELDS}, media_directory="media")
    media = path.parent / "media"
    media.mkdir()
    (media / "tone.wav").write_bytes(tone())
    (media / "clip.webm").write_bytes(b"\x1aE\xdf\xa3 not really a video")
    items = [{"id": "a1", "text": f"A tone {HOSTILE}", "audio_url": "tone.wav", "video_url": "clip.webm"}]
    (path.parent / "data" / "reviews.json").write_text(json.dumps(items), encoding="utf-8")
    srv = ServerProcess(path).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_sound_and_a_video_are_played_by_the_browsers_player(server: ServerProcess, page: Any, width: int) -> None:
    sign_in(page, server, "ana", width, first="a1")
    audio = page.locator("audio.field-audio")
    assert audio.get_attribute("aria-label") == "Audio Sample" and audio.evaluate("a => a.controls")
    becomes(audio, "a => a.readyState >= 1")
    assert abs(audio.evaluate("a => a.duration") - 0.5) < 0.05
    audio.evaluate("a => { a.muted = true; return a.play(); }")
    becomes(audio, "a => a.currentTime > 0")
    video = page.locator("video.field-video")
    assert video.evaluate("v => [v.controls, v.loop, v.style.maxWidth, new URL(v.src).pathname]") == [
        True, True, "320px", "/media/clip.webm"]
    policy = page.evaluate("""fetch('/annotate').then(r => r.headers.get('Content-Security-Policy'))""")
    assert "media-src 'self' https:;" in policy and "default-src 'self'" in policy
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())
    for name, kind in (("tone.wav", "audio/wav"), ("clip.webm", "video/webm")):
        with urllib.request.urlopen(urllib.request.Request(f"{server.url}/media/{name}", headers={"Cookie": cookies})) as r:
            assert r.headers["Content-Type"] == kind and r.headers["X-Content-Type-Options"] == "nosniff"
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= width
