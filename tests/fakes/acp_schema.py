"""Validate ACP frames against the official JSON schema (test oracle).

The schema is `schema/v1/schema.json` of `@agentclientprotocol/sdk` (see
tests/fixtures/acp-schema/README.md for the version).

API
---
validate_client_frame(frame, *, request_method=None) -> None
    Validate one frame the CLIENT sends to the agent. Raises `jsonschema.ValidationError` if invalid.
    - every frame: a JSON object with "jsonrpc": "2.0" matching the schema's "Client" message
      envelope (ClientRequest / ClientResponse / ClientNotification);
    - request: `params` is validated against the method's own definition (found through the
      schema's `x-method`/`x-side` annotations: initialize -> InitializeRequest, session/prompt ->
      PromptRequest, ...). Extension methods (leading "_") need object/absent params. The Kiro
      legacy `session/set_model` is checked against a local {sessionId, modelId} schema (it is not in
      the official schema). Any other method is rejected;
    - notification: session/cancel -> CancelNotification, $/cancel_request ->
      CancelRequestNotification, "_..." extensions need object/absent params; others rejected;
    - response (an answer to an agent->client request): result checked against the Response
      definition of `request_method` (e.g. "session/request_permission" ->
      RequestPermissionResponse) when given; without it, a result holding "outcome" is checked as a
      RequestPermissionResponse (methods the schema does not define, e.g. extensions or Kiro's
      session/set_model, only get the envelope check). Errors are checked against the schema's
      Error object.
validate_agent_frame(frame, *, request_method=None) -> None
    The same for frames the AGENT sends (AgentRequest / AgentResponse / AgentNotification; e.g.
    session/update params -> SessionNotification). Only the stable schema is known: unstable
    fields (legacy `models`, env_var auth methods) pass as extra properties where the schema allows.
validate_record_file(path) -> list[dict]
    Read a `--record` file of the fake agent (one client frame per line), validate every frame with
    validate_client_frame, and return the frames.
definition_validator(name) -> jsonschema validator for `#/$defs/<name>` (cached).
SCHEMA_PATH, SCHEMA (the loaded dict), CLIENT_REQUEST_DEFS / CLIENT_NOTIFICATION_DEFS /
CLIENT_RESPONSE_DEFS / AGENT_REQUEST_DEFS / AGENT_NOTIFICATION_DEFS / AGENT_RESPONSE_DEFS
(method -> $defs name).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "fixtures" / "acp-schema" / "schema.json"
SCHEMA_URI = "urn:acp-relay-tests:acp-schema:v1"
SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
_DEFS: dict[str, Any] = SCHEMA["$defs"]

# Kiro still speaks this legacy method; it is absent from the official schema.
_LEGACY_SET_MODEL = {
    "type": "object",
    "properties": {
        "sessionId": {"type": "string"},
        "modelId": {"type": "string"},
        "_meta": {"type": ["object", "null"]},
    },
    "required": ["sessionId", "modelId"],
}
_EXT_PARAMS = {"type": ["object", "null"]}


def _method_map(side: str, suffix: str) -> dict[str, str]:
    """method -> $defs name, for definitions handled by `side` whose name ends with `suffix`."""
    out: dict[str, str] = {}
    for name, d in _DEFS.items():
        if d.get("x-side") == side and "x-method" in d and name.endswith(suffix):
            out[d["x-method"]] = name
    return out


# x-side names the side that HANDLES the method: requests the client sends are handled by the agent.
CLIENT_REQUEST_DEFS = _method_map("agent", "Request")
CLIENT_NOTIFICATION_DEFS = {**_method_map("agent", "Notification"), **_method_map("protocol", "Notification")}
CLIENT_RESPONSE_DEFS = _method_map("client", "Response")  # answers to agent->client requests
AGENT_REQUEST_DEFS = _method_map("client", "Request")
AGENT_NOTIFICATION_DEFS = {**_method_map("client", "Notification"), **_method_map("protocol", "Notification")}
AGENT_RESPONSE_DEFS = _method_map("agent", "Response")


@functools.cache
def _registry() -> Registry:
    resource: Resource = DRAFT202012.create_resource({**SCHEMA, "$id": SCHEMA_URI})
    return Registry().with_resource(SCHEMA_URI, resource)


@functools.cache
def _validator_for(ref: str) -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator({"$ref": f"{SCHEMA_URI}{ref}"}, registry=_registry())


def definition_validator(name: str) -> jsonschema.protocols.Validator:
    if name not in _DEFS:
        raise KeyError(f"no $defs/{name} in the ACP schema")
    return _validator_for(f"#/$defs/{name}")


@functools.cache
def _envelope_validator(title: str) -> jsonschema.protocols.Validator:
    for i, branch in enumerate(SCHEMA["anyOf"]):
        if branch.get("title") == title:
            return _validator_for(f"#/anyOf/{i}")
    raise KeyError(f"no top-level {title!r} message in the ACP schema")


@functools.cache
def _plain_validator(schema_json: str) -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_json))


def _check(validator: jsonschema.protocols.Validator, instance: Any, where: str) -> None:
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path)
        raise jsonschema.ValidationError(f"{where}: {error.message} (at /{path})")


def _fail(message: str) -> None:
    raise jsonschema.ValidationError(message)


def _kind(frame: Any) -> str:
    if not isinstance(frame, dict):
        _fail(f"frame is not a JSON object: {frame!r:.200}")
    if frame.get("jsonrpc") != "2.0":
        _fail(f'frame lacks "jsonrpc": "2.0": {frame!r:.200}')
    if "method" in frame:
        return "request" if "id" in frame else "notification"
    if "id" in frame and ("result" in frame or "error" in frame):
        if "result" in frame and "error" in frame:
            _fail("response has both result and error")
        return "response"
    _fail(f"frame is neither request, notification nor response: {frame!r:.200}")
    raise AssertionError  # unreachable


def _validate(frame: Any, *, side: str, request_method: str | None) -> None:
    kind = _kind(frame)
    if side == "Client":
        req_defs, note_defs, resp_defs = CLIENT_REQUEST_DEFS, CLIENT_NOTIFICATION_DEFS, CLIENT_RESPONSE_DEFS
    else:
        req_defs, note_defs, resp_defs = AGENT_REQUEST_DEFS, AGENT_NOTIFICATION_DEFS, AGENT_RESPONSE_DEFS
    method = frame.get("method")
    if kind != "response" and not isinstance(method, str):
        _fail(f"{side} {kind}: method is not a string: {method!r:.100}")
    if kind != "response" and method in (req_defs if kind == "request" else note_defs):
        # The envelope would re-check params against every variant (slow): check its parts instead.
        if kind == "request":
            _check(definition_validator("RequestId"), frame["id"], f"{side} request id")
    else:
        _check(_envelope_validator(side), frame, f"{side} {kind}")
    if kind in ("request", "notification"):
        defs = req_defs if kind == "request" else note_defs
        params = frame.get("params")
        where = f"{side} {kind} {method!r} params"
        if method in defs:
            _check(definition_validator(defs[method]), params, where)
        elif isinstance(method, str) and method.startswith("_"):
            _check(_plain_validator(json.dumps(_EXT_PARAMS)), params, where)
        elif side == "Client" and kind == "request" and method == "session/set_model":
            _check(_plain_validator(json.dumps(_LEGACY_SET_MODEL)), params, where)
        else:
            _fail(f"{side} {kind} uses a method the ACP schema does not define for this side: {method!r}")
        return
    if "result" in frame:
        name = resp_defs.get(request_method) if request_method else None
        result = frame["result"]
        if name is None and side == "Client" and isinstance(result, dict) and "outcome" in result:
            name = "RequestPermissionResponse"
        if name is not None:
            _check(definition_validator(name), result, f"{side} response result ({name})")


def validate_client_frame(frame: dict, *, request_method: str | None = None) -> None:
    """Raise jsonschema.ValidationError unless `frame` is a valid client->agent ACP frame."""
    _validate(frame, side="Client", request_method=request_method)


def validate_agent_frame(frame: dict, *, request_method: str | None = None) -> None:
    """Raise jsonschema.ValidationError unless `frame` is a valid agent->client ACP frame."""
    _validate(frame, side="Agent", request_method=request_method)


def validate_record_file(path: str | Path) -> list[dict]:
    """Validate every frame of a fake-agent --record file; return the frames."""
    frames = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        frame = json.loads(line)
        try:
            validate_client_frame(frame)
        except jsonschema.ValidationError as e:
            raise jsonschema.ValidationError(f"{path}:{n}: {e.message}") from e
        frames.append(frame)
    return frames
