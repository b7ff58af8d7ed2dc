"""``core.engine.attached``: which files a person sent reach the agent as text, and how they read."""

from __future__ import annotations

from core.engine.attached import MAX_FILE_BYTES, file_blocks, may_be_text, not_sent
from core.engine.messages import Attachment, InboundMessage
from core.engine.turn import prompt_content


def _file(data: bytes, name: str = "a.txt", mime: str = "text/plain") -> Attachment:
    return Attachment("file", mime, data, name)


def test_a_text_file_is_fenced_past_the_longest_run_of_backticks_in_it() -> None:
    (block,) = file_blocks([_file(b"say ``` and ````` here\n\n", "notes.md")])
    assert block == {"type": "text", "text": "Attached file: notes.md\n``````\nsay ``` and ````` here\n``````"}


def test_a_byte_order_mark_is_not_text_and_a_file_without_a_name_is_named_untitled() -> None:
    (block,) = file_blocks([_file("\ufeffhé".encode(), "")])
    assert block["text"] == "Attached file: untitled\n```\nhé\n```"


def test_utf16_with_its_byte_order_mark_is_text() -> None:
    (block,) = file_blocks([_file("Get-Process > out.txt\r\n".encode("utf-16"), "out.txt")])
    assert block["text"] == "Attached file: out.txt\n```\nGet-Process > out.txt\n```"


def test_what_is_not_utf8_text_or_is_too_large_or_was_not_downloaded_is_not_sent() -> None:
    files = [_file(b"\xfe\xffh\x00\xd8", "utf16.txt"), _file(b"PK\x03\x04\x00", "a.zip"), _file(b"", "big.log"),
             _file(b"a" * (MAX_FILE_BYTES + 1), "over.log"), _file(b"a" * MAX_FILE_BYTES, "limit.log")]
    assert not_sent(files) == ["utf16.txt", "a.zip", "big.log", "over.log"]
    assert [b["text"].split("\n", 1)[0] for b in file_blocks(files)] == ["Attached file: limit.log"]


def test_images_are_not_files_and_the_prompt_keeps_text_then_files_then_images() -> None:
    image = Attachment("image", "image/png", b"\x89PNG")
    message = InboundMessage("s", "s:1", "u", "look", "m1", attachments=(image, _file(b"x", "x.txt")))
    assert not_sent(message.attachments) == []
    blocks = prompt_content(message)
    assert isinstance(blocks, list)
    assert [b["type"] for b in blocks] == ["text", "text", "image"]
    assert blocks[1]["text"].startswith("Attached file: x.txt")
    only_text = prompt_content(InboundMessage("s", "s:1", "u", "look", "m2", attachments=(_file(b"\x00", "b"),)))
    assert only_text == "look", "a file that is not sent leaves the prompt as the text alone"


def test_media_types_that_are_never_text_are_not_worth_downloading() -> None:
    assert [m for m in ("text/plain", "application/json", "application/octet-stream", "application/x-yaml",
                        "audio/ogg", "video/mp4", "image/png", "application/PDF", "application/zip",
                        "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
            if may_be_text(m)] == ["text/plain", "application/json", "application/octet-stream", "application/x-yaml"]
