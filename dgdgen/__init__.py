"""dgdgen: progressive GitOps rollouts for NVIDIA Dynamo DynamoGraphDeployments.

Kept import-light on purpose: ``dgdgen --help`` and the pre-commit path must start fast, so
heavy libraries (pydantic, jsonschema, cel-python, jinja2) are imported by the modules that
need them, never here.
"""

__version__ = "0.1.0"
