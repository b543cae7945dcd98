from __future__ import annotations

import pytest
from analysis_support import EXAMPLE


@pytest.fixture(scope="session")
def prepared():  # type: ignore[no-untyped-def]
    from dgdgen.pipeline.prepare import prepare

    return prepare(str(EXAMPLE))
