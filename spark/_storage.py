"""Where the audit reads and writes: Hadoop URIs on whatever Spark engine runs it.

Every input and output is a URI that Spark's Hadoop filesystems resolve (``abfss://``,
``wasbs://``, ``dbfs:/``, ``viewfs://``, ``file://`` or a plain path), never a ``pathlib``
path on the machine that runs Python: on a cluster or through Spark Connect that machine's disk
is not where the data is. Two engines, one interface:

- a **classic** session (``local[*]``, a standalone or YARN cluster, Databricks and Synapse job
  clusters) reaches the JVM: files are listed, written, renamed and deleted with the Hadoop
  ``FileSystem`` of the session's Hadoop configuration (:class:`HadoopFiles`);
- a **Spark Connect** session (Databricks serverless and shared clusters, Databricks Connect,
  ``start-connect-server.sh``) has no JVM handle: files are listed with Spark's ``binaryFile``
  source (paths only, no content read), Spark writes the data, and the two report files go to the
  server with ``SparkSession.copyFromLocalToFs``, which takes an absolute path on the server's
  default filesystem, without a scheme (``/Volumes/...`` on Databricks) (:class:`ConnectFiles`).

**Nothing half-written looks complete.** :class:`OutputFolder` owns the audit's outputs
(:data:`OUTPUTS`). On a classic session everything is written under a staging folder inside the
output, ``_audit-incomplete-<id>/`` (a name Spark's readers skip), and moved into place at the
end, ``report.json`` last: while the moves run there is no ``report.json``, so a folder that has
one holds one complete audit. Spark Connect cannot rename or delete, so it writes in place into
an output folder that must not exist yet, ``report.json`` last.

How it fails: :class:`StorageError` with one line naming the URI and what the filesystem said.
"""

from __future__ import annotations

import logging
import os
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlparse

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

logger = logging.getLogger(__name__)

OUTPUTS = (
    "unique",
    "duplicates",
    "missing",
    "loops",
    "stream_unique",
    "stream_sink",
    "stream_checkpoint",
    "report.html",
    "report.json",
)
"""Everything the audit writes under ``--output``, in the order it is moved into place
(``report.json``, the mark of a complete audit, last). An output an audit did not write this time
(no missing messages: no ``missing/``) is removed, so nothing of an earlier audit is left."""

SCRATCH = ("stream_sink", "stream_checkpoint")
"""Outputs only the audit itself reads, left in the staging folder and removed with it: the
streaming query's checkpoint, and its file sink, whose ``_spark_metadata`` log names its files
by absolute path and so cannot be moved (``stream_unique/`` is written from it as plain
Parquet)."""
COMPLETE_MARK = "report.json"
STAGING_PREFIX = "_audit-incomplete-"


class StorageError(RuntimeError):
    """A URI that cannot be listed, read or written; the message is one line."""


@dataclass(frozen=True)
class FileEntry:
    """One file under a listed folder."""

    uri: str
    """The file's full URI as the filesystem spells it."""
    relative: str
    """Its path below the listed folder, ``/``-separated."""
    size: int


def join(base: str, name: str) -> str:
    """``base/name`` for a URI or a plain path (never through ``pathlib``, which would turn
    ``viewfs://audit/out`` into ``viewfs:/audit/out``)."""
    return f"{base.rstrip('/')}/{name}"


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM, no ``sparkContext``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def is_local_master(spark: SparkSession) -> bool:
    """Whether Spark runs in one JVM (``local[*]``), asked through the session's configuration,
    which every engine answers."""
    return (spark.conf.get("spark.master", None) or "").startswith("local")


def one_line(error: BaseException) -> str:
    """The first line of what a filesystem or Spark error says (Java stack traces and Spark's
    SQLSTATE details stay out of the audit's one-line errors)."""
    java = getattr(error, "java_exception", None)
    text = str(java) if java is not None else str(error)
    if isinstance(error, PySparkException) and hasattr(error, "getMessage"):
        text = error.getMessage() or text
    line = next((part.strip() for part in text.splitlines() if part.strip()), type(error).__name__)
    return line[:400]


def _hidden(relative: str) -> bool:
    """Spark's file sources skip names starting with ``_`` or ``.`` (``_SUCCESS``, ``.crc``
    files, ``_temporary``), at every level below the folder read."""
    return any(part.startswith(("_", ".")) for part in relative.split("/"))


class Files(Protocol):
    """What the audit asks of a filesystem."""

    def list_files(self, folder: str) -> list[FileEntry]:
        """Every file below ``folder`` (recursively) that Spark's readers would read, sorted by
        relative path. Raises :class:`StorageError` when it does not exist or cannot be read."""
        ...

    def exists(self, uri: str) -> bool: ...

    def write_text(self, uri: str, text: str) -> None: ...


# ---------------------------------------------------------------- classic: Hadoop FileSystem


class HadoopFiles:
    """The Hadoop ``FileSystem`` API of a classic session (through its JVM gateway).

    The Hadoop configuration is the session's (``sessionState.newHadoopConf``): the cluster's,
    plus any ``spark.hadoop.*`` setting, e.g. a ``viewfs`` mount table or ABFS credentials.
    """

    def __init__(self, spark: SparkSession) -> None:
        self._jvm: Any = spark.sparkContext._jvm
        self._conf: Any = spark._jsparkSession.sessionState().newHadoopConf()

    def _path(self, uri: str) -> tuple[Any, Any]:
        path = self._jvm.org.apache.hadoop.fs.Path(uri)
        return path, path.getFileSystem(self._conf)

    def _call(self, what: str, uri: str, action: Any) -> Any:
        try:
            return action()
        except StorageError:
            raise
        except Exception as error:  # py4j's Py4JJavaError: the Java exception says what failed
            raise StorageError(f"{what} {uri}: {one_line(error)}") from None

    def list_files(self, folder: str) -> list[FileEntry]:
        def listing() -> list[FileEntry]:
            path, fs = self._path(folder)
            if not fs.exists(path):
                raise StorageError(f"cannot read {folder}: no such file or folder")
            base = fs.makeQualified(path).toUri().getPath().rstrip("/")
            found = []
            iterator = fs.listFiles(path, True)
            while iterator.hasNext():
                status = iterator.next()
                qualified = status.getPath()
                relative = qualified.toUri().getPath()[len(base) :].lstrip("/")
                if not _hidden(relative or qualified.getName()):
                    found.append(FileEntry(qualified.toString(), relative, status.getLen()))
            return sorted(found, key=lambda entry: entry.relative)

        result: list[FileEntry] = self._call("cannot list", folder, listing)
        return result

    def exists(self, uri: str) -> bool:
        def check() -> bool:
            path, fs = self._path(uri)
            return bool(fs.exists(path))

        result: bool = self._call("cannot read", uri, check)
        return result

    def write_text(self, uri: str, text: str) -> None:
        def write() -> None:
            path, fs = self._path(uri)
            stream = fs.create(path, True)
            try:
                stream.write(bytearray(text.encode("utf-8")))
            finally:
                stream.close()

        self._call("cannot write", uri, write)

    def mkdirs(self, uri: str) -> None:
        def make() -> None:
            path, fs = self._path(uri)
            if not fs.mkdirs(path):
                raise StorageError(f"cannot create {uri}")

        self._call("cannot create", uri, make)

    def delete(self, uri: str) -> None:
        def remove() -> None:
            path, fs = self._path(uri)
            if fs.exists(path):
                fs.delete(path, True)

        self._call("cannot delete", uri, remove)

    def rename(self, source: str, target: str) -> None:
        def move() -> None:
            path, fs = self._path(source)
            if not fs.rename(path, self._jvm.org.apache.hadoop.fs.Path(target)):
                raise StorageError(f"cannot move {source} to {target}")

        self._call("cannot move", source, move)


# ---------------------------------------------------------------- Spark Connect


class ConnectFiles:
    """What a Spark Connect client can do with the server's filesystems: list and test with
    Spark's ``binaryFile`` source (only the paths are read), write small text files with
    ``copyFromLocalToFs`` (absolute paths on the server's default filesystem only)."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    def list_files(self, folder: str) -> list[FileEntry]:
        try:
            rows = (
                self._spark.read.format("binaryFile")
                .option("recursiveFileLookup", "true")
                .load(folder)
                .select("path", "length")
                .collect()
            )
        except Exception as error:  # the server's AnalysisException / gRPC errors
            raise StorageError(f"cannot read {folder}: {_not_found(error)}") from None
        base = _path_part(folder)
        found = []
        for row in rows:
            uri = str(row["path"])
            relative = _path_part(uri)[len(base) :].lstrip("/")
            if not _hidden(relative):
                found.append(FileEntry(uri, relative, int(row["length"])))
        return sorted(found, key=lambda entry: entry.relative)

    def exists(self, uri: str) -> bool:
        try:
            # Only the path is listed: binaryFile reads no content for a path-only projection.
            self._spark.read.format("binaryFile").load(uri).select(F.col("path")).schema  # noqa: B018
        except Exception as error:
            if "PATH_NOT_FOUND" in str(error) or "does not exist" in str(error):
                return False
            raise StorageError(f"cannot read {uri}: {one_line(error)}") from None
        return True

    def write_text(self, uri: str, text: str) -> None:
        with tempfile.TemporaryDirectory(prefix="audit-") as folder:
            local = os.path.join(folder, uri.rsplit("/", 1)[-1])
            with open(local, "w", encoding="utf-8") as handle:
                handle.write(text)
            try:
                self._spark.copyFromLocalToFs(local, uri)
            except Exception as error:
                raise StorageError(f"cannot write {uri}: {one_line(error)}") from None


def _path_part(uri: str) -> str:
    return urlparse(uri).path if "://" in uri or uri.startswith("file:") else uri


def _not_found(error: BaseException) -> str:
    text = str(error)
    if "PATH_NOT_FOUND" in text or "does not exist" in text:
        return "no such file or folder"
    return one_line(error)


def files_of(spark: SparkSession) -> HadoopFiles | ConnectFiles:
    """The filesystem access of ``spark``'s engine."""
    return ConnectFiles(spark) if is_connect(spark) else HadoopFiles(spark)


# ---------------------------------------------------------------- the output folder


class OutputFolder:
    """The audit's ``--output``: where each output is written while the audit runs, and the
    moves that put them in place at the end (see the module docstring)."""

    def __init__(self, spark: SparkSession, uri: str) -> None:
        self.uri = uri
        self._files = files_of(spark)
        self._written: set[str] = set()
        if isinstance(self._files, HadoopFiles):
            self._staging: str | None = join(uri, f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}")
        else:
            self._staging = None

    def open(self) -> None:
        """Check that the output can be written before any input is read.

        Raises:
            StorageError: on Spark Connect, the output has a scheme or already exists (the
                client can neither replace files nor write outside the server's default
                filesystem); on a classic session, the staging folder cannot be created.
        """
        if isinstance(self._files, HadoopFiles):
            assert self._staging is not None
            self._files.mkdirs(self._staging)
            return
        parsed = urlparse(self.uri)
        if parsed.scheme or not self.uri.startswith("/"):
            raise StorageError(
                f"--output {self.uri}: through Spark Connect the report files can only be "
                "written to an absolute path on the server's default filesystem, without a "
                "scheme (e.g. /Volumes/catalog/schema/volume/audit)"
            )
        if self._files.exists(self.uri):
            raise StorageError(
                f"--output {self.uri} exists: through Spark Connect the audit cannot replace "
                "files, so it writes into a new folder; name one that does not exist yet"
            )

    def path(self, name: str) -> str:
        """Where Spark writes output ``name`` during the audit."""
        assert name in OUTPUTS, name
        self._written.add(name)
        return join(self._staging or self.uri, name)

    def write_text(self, name: str, text: str) -> None:
        self._files.write_text(self.path(name), text)

    def commit(self) -> None:
        """Move what was written into place (``report.json`` last), remove the outputs of an
        earlier audit that this one did not write, and the staging folder."""
        files = self._files
        if not isinstance(files, HadoopFiles):
            return
        assert self._staging is not None
        files.delete(join(self.uri, COMPLETE_MARK))
        for name in OUTPUTS:
            target = join(self.uri, name)
            if name != COMPLETE_MARK:
                files.delete(target)
            if name in SCRATCH:
                continue
            if name in self._written and files.exists(join(self._staging, name)):
                files.rename(join(self._staging, name), target)
        files.delete(self._staging)
        logger.info("moved the outputs into %s", self.uri)

    def abort(self) -> None:
        """Remove what a failed audit staged (a classic session), leaving the earlier
        outputs, if any, as they were."""
        if isinstance(self._files, HadoopFiles) and self._staging is not None:
            try:
                self._files.delete(self._staging)
            except StorageError as error:
                logger.warning("could not remove %s: %s", self._staging, error)

    def written(self) -> Iterable[str]:
        return sorted(self._written)


__all__ = [
    "OUTPUTS",
    "ConnectFiles",
    "FileEntry",
    "Files",
    "HadoopFiles",
    "OutputFolder",
    "StorageError",
    "files_of",
    "is_connect",
    "is_local_master",
    "join",
    "one_line",
]
