"""Two properties of what reaches a platform: a token still arriving is never shown half-way, and
a redelivery that partly lands never sends the landed part again."""

from __future__ import annotations

from .conftest import KEY, RelayFactory, make_surface, until

TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


async def test_a_token_still_arriving_is_never_shown_half_way(relay: RelayFactory) -> None:
    r = await relay()
    seen: list[str] = []
    r.surface.observers.append(lambda method, key, text: seen.append(text))
    head, tail = TOKEN[:16], TOKEN[16:]
    reply = await r.ask(f"text the key is {head}\nsleep 0.3\ntext {tail} and that is all")
    assert any("the key is" in text for text in seen[:-1]), "an edit was streamed while the token arrived"
    assert not any(head in text for text in seen), "no edit ever showed the start of the token"
    assert "ghp_[redacted] and that is all" in reply.text


async def test_a_redelivery_that_partly_lands_never_sends_the_landed_part_again(relay: RelayFactory) -> None:
    surface = make_surface(max_message_length=60)
    r = await relay(surface=surface)
    first, second = "FIRST " + "a" * 40, "SECOND " + "b" * 40
    recovered = False
    surface.refuse = lambda text: "SECOND" in text and not recovered
    r.store.add_outbound(KEY, {"surface": surface.name, "text": f"{first}\n\n{second}"})
    r.engine.outbox.schedule_redelivery()
    await until(lambda: any("FIRST" in t for t in r.texts()), what="the first piece lands")
    await until(lambda: [rec.payload["text"] for rec in r.store.pending_outbound()] == [second],
                what="the ledger keeps only the piece that did not land")
    recovered = True
    await until(lambda: not r.store.pending_outbound(), what="the rest is redelivered")
    texts = r.texts()
    assert sum("FIRST" in t for t in texts) == 1 and sum("SECOND" in t for t in texts) == 1
