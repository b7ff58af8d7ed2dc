"""Issue 22, the agent's files come back, through the engine (memory surface, the scripted agent as a
real process): links to files inside the project folder are sent, those outside it (also through a
symlink), missing or too big are not and one sentence says why; embedded text and images are sent,
an image only as an image when its bytes are one; edits show as +added -removed on their tool line and
the turn's diff is shown, or sent as changes.diff when it is long."""

from __future__ import annotations

import json
import os

from tests.engine.conftest import Relay, RelayFactory, make_surface

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


#: The scripted agent reports edits it made without asking (as agents in an auto-accept mode do).
UNGATED = {"fake": {"tool_gate": "allow"}}


def files(r: Relay) -> dict[str, bytes]:
    return dict(r.surface.files.values())


async def test_links_inside_the_folder_are_sent_and_the_others_say_why(relay: RelayFactory) -> None:
    r = await relay()
    (r.workdir / "report.md").write_text("# Report\n")
    (r.workdir / "sub").mkdir()
    (r.workdir / "sub" / "data.csv").write_text("a,b\n1,2\n")
    (r.tmp / "secret.txt").write_text("outside")
    os.symlink(r.tmp / "secret.txt", r.workdir / "innocent.txt")
    reply = await r.ask("text here you go\nlink report.md\ntool t1 read Read data\ntool_link t1 sub/data.csv\n"
                        "link ../secret.txt\nlink innocent.txt\nlink missing.txt\nlink sub")
    assert files(r) == {"report.md": b"# Report\n", "data.csv": b"a,b\n1,2\n"}
    answer = reply.text
    assert "secret.txt was not sent: it is outside the conversation's project folder." in answer
    assert "innocent.txt was not sent: it is outside the conversation's project folder." in answer
    assert "missing.txt was not sent: it does not exist." in answer
    assert "sub was not sent: it is not a file." in answer
    captions = [m.text for m in r.messages() if m.message_id in r.surface.files]
    assert captions == ["📎 report.md (9 B)", "📎 data.csv (8 B)"]


async def test_a_file_over_the_platforms_limit_is_not_sent_and_says_so(relay: RelayFactory) -> None:
    r = await relay(surface=make_surface(max_file_bytes=1000))
    (r.workdir / "big.bin").write_bytes(b"x" * 5000)
    reply = await r.ask("text done\nlink big.bin")
    assert files(r) == {}
    assert "big.bin was not sent: it is 4.9 KB, over the 1000 B this platform takes." in reply.text


async def test_embedded_text_and_images_are_sent_an_image_only_when_its_bytes_are_one(relay: RelayFactory) -> None:
    r = await relay()
    (r.workdir / "shot.png").write_bytes(PNG)
    (r.workdir / "fake.png").write_bytes(b"<script>not an image</script>")
    await r.ask("text look\nembed notes.txt hello there\nimage shot.png\nimage fake.png")
    assert files(r) == {"notes.txt": b"hello there", "shot.png": PNG, "fake.png": b"<script>not an image</script>"}
    calls = [c for c in r.surface.calls if c[0] == "send_file"]
    assert [c[2] for c in calls] == ["notes.txt", "shot.png", "fake.png"]


async def test_an_edit_shows_its_counts_on_the_tool_line_and_a_short_diff_in_the_answer(relay: RelayFactory) -> None:
    r = await relay(agents=UNGATED)
    edit = {"path": "src/app.py", "oldText": "a = 1\nb = 2\n", "newText": "a = 1\nb = 3\nc = 4\n"}
    reply = await r.ask(f"diff e1 {json.dumps(edit)}\ntext edited")
    text = reply.text
    assert "(+2 -1)" in text and "app.py" in text
    # (the fence itself is not asserted: the memory surface may show this reply as plain text, when the
    # tool line's path holds an odd number of underscores, which its markup rule rejects)
    assert "+b = 3" in text and "-b = 2" in text and "--- a/src/app.py" in text and "+++ b/src/app.py" in text
    assert files(r) == {}, "a short diff stays in the answer"


async def test_a_long_diff_is_sent_as_one_file(relay: RelayFactory) -> None:
    r = await relay(agents=UNGATED)
    new = "".join(f"line {i}\n" for i in range(200))
    first = {"path": "a.txt", "oldText": None, "newText": new}
    second = {"path": "b.txt", "oldText": "x\n", "newText": "y\n"}
    reply = await r.ask(f"diff e1 {json.dumps(first)}\ndiff e2 {json.dumps(second)}\ntext done")
    assert "```diff" not in reply.text
    assert "(+200 -0)" in reply.text and "(+1 -1)" in reply.text, reply.text
    diff = files(r)["changes.diff"].decode()
    assert "--- /dev/null" in diff and "+++ b/a.txt" in diff and "-x" in diff and "+y" in diff
    [caption] = [m.text for m in r.messages() if m.message_id in r.surface.files]
    assert caption == "📝 The changes of this turn: 2 files, +201 -1"
