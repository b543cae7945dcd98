"""The rollout spec's building blocks: the base model every part of the spec derives from (no
coercion, unknown fields refused, camelCase keys), its field types (durations, images,
revisions, percentages) and the names and patterns the other parts share.

No ``from __future__ import annotations`` here, as in every module of the spec: with it, pydantic
compiles and evaluates each annotation from its text when a model is built.
"""

import inspect
import re
import types
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from dgdgen import __version__

API_VERSION = "dgdgen.dev/v1alpha1"
KIND = "DGDRollout"

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_PERCENT = re.compile(r"^(\d{1,3})%$")
# A Kubernetes resource quantity (apimachinery resource.Quantity: a number with an optional
# binary, decimal or exponent suffix), positive.
QUANTITY = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)(?:[KMGTPE]i|[numkMGTPE]|[eE][-+]?\d+)?$")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# The promotion image (argo/Dockerfile) as `docker build -t` names it in docs/gitops.md. No
# registry publishes it: every user builds and pushes their own (dgdgen.render.images warns).
PROMOTION_REPOSITORY = "ghcr.io/dgdgen/dgdgen-promote"
PROMOTION_IMAGE = f"{PROMOTION_REPOSITORY}:{__version__}"
HOSTNAME = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def parse_duration(text: str) -> int:
    """``"1h30m"`` / ``"10m"`` / ``"45s"`` → seconds (the Go duration subset Argo uses)."""
    m = _DURATION.match(text)
    if not text or not m or not any(m.groups()):
        raise ValueError(f"expected a duration such as 30s, 10m or 1h30m, got {text!r}")
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    return h * 3600 + mi * 60 + s


def _duration(v: str) -> str:
    parse_duration(v)
    return v


def _percent_or_count(v: int | str) -> int | str:
    if isinstance(v, bool):
        # pydantic turns only ValueError into a validation error with a location
        raise ValueError("expected a replica count or a percentage such as 25%")  # noqa: TRY004
    if isinstance(v, int):
        if v < 0:
            raise ValueError("must not be negative")
        return v
    m = _PERCENT.match(v)
    if not m or int(m.group(1)) > 100:
        raise ValueError(f"expected a replica count or a percentage 0%..100%, got {v!r}")
    return v


def _revision(v: str) -> str:
    if len(v) > 12 or not DNS1035_LABEL.match(v):
        raise ValueError(
            "a revision id is 1-12 characters of lower-case letters, digits and '-', starting "
            f"with a letter (it becomes part of object names), got {v!r}"
        )
    return v


def _image(v: str) -> str:
    # The API server requires a container image and refuses one with leading or trailing
    # whitespace (k8s.io/kubernetes pkg/apis/core/validation validateContainerCommon); the DGD
    # CRD does not, so a bad image would be accepted here and fail only when the operator
    # creates the pods.
    if not v or v != v.strip():
        raise ValueError(f"expected a container image reference, got {v!r}")
    # A digest the API server takes but no registry resolves fails only at the pull, on the
    # cluster: `name@sha256:<64 hex>` or `name:tag@sha256:<64 hex>` (distribution/reference).
    name, at, digest = v.partition("@")
    if at and (not name or not DIGEST.fullmatch(at + digest)):
        raise ValueError(f"expected an image pinned as NAME@sha256:<64 lower-case hex> (or "
                         f"NAME:TAG@sha256:...), got {v!r}")
    return v


Duration = Annotated[str, AfterValidator(_duration)]
Image = Annotated[str, AfterValidator(_image)]
PercentOrCount = Annotated[int | str, AfterValidator(_percent_or_count)]
Revision = Annotated[str, AfterValidator(_revision)]


def _leaf_types(annotation: Any) -> set[Any]:
    """The plain types an annotation admits (Optional, unions and Annotated unwrapped)."""
    import typing

    out: set[Any] = set()
    stack = [annotation]
    while stack:
        t = stack.pop()
        origin = typing.get_origin(t)
        if origin is Annotated:
            stack.append(typing.get_args(t)[0])
        elif origin in (typing.Union, types.UnionType):
            stack.extend(typing.get_args(t))
        elif origin is not None:
            out.add(origin)
        else:
            out.add(t)
    return out


class SpecModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        use_enum_values=False,
        defer_build=True,
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_coercion(cls, value: Any, info: ValidationInfo) -> Any:
        """Numbers and booleans exactly as written: pydantic's lax mode would read `weight: true`
        as 1 and `replicas: "2"` as 2; a spec says what it means or is refused."""
        if info.field_name is None or not isinstance(value, (bool, str, int, float)):
            return value
        leaves = _leaf_types(cls.model_fields[info.field_name].annotation)
        numeric = leaves & {int, float}
        number = "a number" if float in leaves else "an integer"
        if isinstance(value, bool):
            if numeric and bool not in leaves:
                raise ValueError(f"expected {number}, got {str(value).lower()}")
        elif isinstance(value, str):
            if (numeric or bool in leaves) and str not in leaves and not leaves - {int, float, bool,
                                                                                  type(None)}:
                raise ValueError(f"expected {number if numeric else 'true or false'}, "
                                 f"got the string {value!r}")
        elif bool in leaves and not numeric and str not in leaves:
            raise ValueError(f"expected true or false, got {value!r}")
        elif isinstance(value, float) and int in leaves and float not in leaves:
            raise ValueError(f"expected an integer, got {value!r}")
        return value


# pydantic inspects a field validator's signature once for every field it applies to (155 times
# for `_no_coercion`, about 1 % of a `dgdgen validate`); the signature given here is read back
# instead of being worked out again (`inspect.signature` honours `__signature__`).
_no_coercion: Any = SpecModel._no_coercion.__func__  # type: ignore[attr-defined]
_no_coercion.__signature__ = inspect.signature(_no_coercion)
