"""JUnit XML: one test case per checked file and rule that fired (a failure per finding), one
passing case per clean file; suppressed findings are skipped cases carrying their reason."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from dgdgen.check.engine import Report
from dgdgen.check.findings import Finding


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    suites = ET.Element("testsuites", name="dgdgen check")
    suite = ET.SubElement(suites, "testsuite", name="dgdgen")
    by_file: dict[str, list[Finding]] = {f: [] for f in report.files}
    for f in report.findings:
        by_file.setdefault(f.file, []).append(f)
    tests = failures = skipped = 0
    for file in sorted(by_file):
        findings = by_file[file]
        if not findings:
            ET.SubElement(suite, "testcase", classname=file, name="dgdgen check")
            tests += 1
            continue
        for f in findings:
            case = ET.SubElement(suite, "testcase", classname=file,
                                 name=f"{f.code} {f.slug} {f.object} line {f.line}")
            tests += 1
            if f.suppressed:
                ET.SubElement(case, "skipped", message=f"suppressed: {f.suppression_reason}")
                skipped += 1
            else:
                failure = ET.SubElement(case, "failure", type=f.severity.value,
                                        message=f"{f.code}: {f.message}")
                failure.text = (f"{f.file}:{f.line}:{f.column} {f.object}\n"
                                f"{f.details or f.message}\nFix: {f.remediation}")
                failures += 1
    for el in (suites, suite):
        el.set("tests", str(tests))
        el.set("failures", str(failures))
        el.set("skipped", str(skipped))
        el.set("errors", "0")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"
