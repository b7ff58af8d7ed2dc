"""Switching model keeps everything else about the conversation, Kiro's session file included."""

from __future__ import annotations

from .conftest import KEY, RelayFactory, until


async def test_switching_model_keeps_the_session_file_a_restart_needs(relay: RelayFactory) -> None:
    r = await relay("--kiro", "--models", "kiro-fast,kiro-deep")
    await r.ask("text hello")
    before = r.store.get_conversation("memory:c1")
    assert before is not None and before.session_meta  # Kiro named its session file

    await r.send("/model kiro-deep")
    await until(lambda: any("kiro-deep" in t for t in r.texts()), what="the model switch is confirmed")
    after = r.store.get_conversation("memory:c1")
    assert after is not None
    assert after.model == "kiro-deep"
    assert (after.session_id, after.session_meta) == (before.session_id, before.session_meta)

    await r.restart()
    reply = await r.ask("text still the same conversation")
    assert "still the same conversation" in reply.text
    assert r.session_id() == before.session_id  # resumed, because the load carried the session file


async def test_models_are_listed_before_the_first_message(relay: RelayFactory) -> None:
    r = await relay("--models", "model-a,model-b")
    current, models = await r.engine.models(KEY)
    assert models == ("model-a", "model-b")
    assert current == "model-a"
    assert r.methods().count("session/new") == 1, "listing binds the conversation's session once"
    await r.ask("hello")
    assert r.methods().count("session/new") == 1, "the first message reuses that session"


QWEN_ID = "$runtime|openai|qwen3-coder-plus(openai)"


async def test_a_model_is_shown_by_the_name_the_agent_gives_it_and_can_be_chosen_by_it(
        relay: RelayFactory) -> None:
    """qwen-code's model ids read "$runtime|openai|qwen3-coder-plus(openai)"; it names them too."""
    r = await relay("--models", f"{QWEN_ID}=qwen3-coder-plus,other-model")
    await r.send("/model")
    await until(lambda: any("Current model" in t for t in r.texts()), what="the model list")
    listing = next(t for t in r.texts() if "Current model" in t)
    assert "Current model: qwen3-coder-plus" in listing and "other-model" in listing
    assert "$runtime" not in listing
    await r.send("/status")
    await until(lambda: any("Agent:" in t for t in r.texts()), what="the status")
    assert "Model: qwen3-coder-plus" in next(t for t in r.texts() if "Agent:" in t)

    await r.send("/model other-model")
    await until(lambda: any("other-model" in t and "Current" not in t for t in r.texts()), what="switched")
    await r.send("/model qwen3-coder-plus")  # by its name: the agent is sent the id
    await until(lambda: r.methods().count("session/set_model") == 2, what="switched back by name")
    stored = r.store.get_conversation(KEY)
    assert stored is not None and stored.model == QWEN_ID
