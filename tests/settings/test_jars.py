"""The `spark` jar set is named twice, and the two agree: as `--packages` coordinates derived from the installed
pyspark and delta-spark (what pyproject.toml pins), and in java/spark/pom.xml, which `make jars` copies."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from kraftlake.settings.jars import REPO, spark_packages

POM = "{http://maven.apache.org/POM/4.0.0}"


def pom_coordinates() -> list[str]:
    """The pom's dependencies that are not `provided`, as group:artifact:version with its properties filled in."""
    root = ElementTree.parse(REPO / "java" / "spark" / "pom.xml").getroot()
    properties = {f"${{{p.tag.removeprefix(POM)}}}": p.text or "" for p in root.find(f"{POM}properties") or []}
    coordinates = []
    for dependency in root.iter(f"{POM}dependency"):
        if dependency.findtext(f"{POM}scope") == "provided":
            continue
        version = dependency.findtext(f"{POM}version") or ""
        coordinates.append(":".join([dependency.findtext(f"{POM}groupId") or "",
                                     dependency.findtext(f"{POM}artifactId") or "", properties.get(version, version)]))
    return coordinates


# In the pom for the fleet's catalog on PostgreSQL only (kraftlake.fleet.catalog), not for the job.
METASTORE_DRIVER = "org.postgresql:postgresql:"


def test_the_packages_are_the_jar_set_of_make_jars() -> None:
    job = [c for c in pom_coordinates() if not c.startswith(METASTORE_DRIVER)]
    assert len(job) == len(pom_coordinates()) - 1
    assert sorted(spark_packages(s3=True)) == sorted(job)
    assert spark_packages() == [c for c in spark_packages(s3=True) if "hadoop-aws" not in c]
