"""Errors of the metadata format layer. Each names where the bad bytes are: file, byte position, offset."""

from __future__ import annotations


class RecordFormatError(Exception):
    """Bytes that are not a valid KRaft metadata log: the message names the source, position and offset."""

    def __init__(
        self,
        reason: str,
        *,
        source: str | None = None,
        position: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.reason = reason
        self.source = source
        self.position = position
        self.offset = offset
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = [
            part
            for part in (
                self.source,
                None if self.position is None else f"byte position {self.position}",
                None if self.offset is None else f"offset {self.offset}",
            )
            if part
        ]
        return f"{', '.join(where)}: {self.reason}" if where else self.reason

    def located(
        self, *, source: str | None = None, position: int | None = None, offset: int | None = None
    ) -> RecordFormatError:
        """The same error with the location filled in where it was still unknown."""
        return type(self)(
            self.reason,
            source=self.source if self.source is not None else source,
            position=self.position if self.position is not None else position,
            offset=self.offset if self.offset is not None else offset,
        )


class CorruptBatchError(RecordFormatError):
    """A batch whose framing, CRC or record layout is broken, or a file that ends inside a batch."""


class UnknownRecordTypeError(RecordFormatError):
    """A metadata apiKey or control record type this release of the format does not define."""


class UnsupportedVersionError(RecordFormatError):
    """A known record type at a version outside the versions its schema defines."""


class CompressionError(RecordFormatError):
    """A batch compressed with a codec that cannot be decoded here, or whose payload does not decompress."""


class NotAMetadataLogError(RecordFormatError):
    """A path given as a metadata log that holds none: missing, an unrelated or empty directory, a file that is
    not a segment or snapshot. Refused instead of read as an empty log (which would print an empty image)."""
