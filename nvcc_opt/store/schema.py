"""SQLAlchemy mapping of the store's tables. Rows never leave the store package.

This describes the schema that `migrations.py` builds (a test compares them); it never creates
tables itself. JSON values are kept as TEXT and encoded by the store, so that the
standard-library fast path reads and writes exactly the same text.
"""

from __future__ import annotations

from sqlalchemy import Boolean, ForeignKey, Index, Integer, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class RegionRow(Base):
    __tablename__ = "regions"
    __table_args__ = (
        UniqueConstraint("file", "name", "text_hash", name="uq_regions_file_name_hash"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    file: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    start_line: Mapped[int] = mapped_column(Integer)
    end_line: Mapped[int] = mapped_column(Integer)
    text_hash: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    first_seen: Mapped[str] = mapped_column(Text)
    last_seen: Mapped[str] = mapped_column(Text)
    compiles: Mapped[list[CompileRow]] = relationship(order_by="CompileRow.output")


class CompileRow(Base):
    """The latest compile of one object file that contained the region."""

    __tablename__ = "compiles"
    __table_args__ = (UniqueConstraint("region_id", "output", name="uq_compiles_region_output"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    region_id: Mapped[int] = mapped_column(ForeignKey("regions.id", ondelete="CASCADE"))
    output: Mapped[str] = mapped_column(Text)
    command: Mapped[str] = mapped_column(Text)  # JSON list
    cwd: Mapped[str] = mapped_column(Text)
    context: Mapped[str] = mapped_column(Text)  # JSON object of CompileContext fields
    last_seen: Mapped[str] = mapped_column(Text)


class RewriteRow(Base):
    __tablename__ = "rewrites"
    __table_args__ = (
        UniqueConstraint("content_key", name="uq_rewrites_content_key"),
        Index("ix_rewrites_file_hash", "file", "region_hash"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    file: Mapped[str] = mapped_column(Text)
    region_name: Mapped[str] = mapped_column(Text)
    region_hash: Mapped[str] = mapped_column(Text)
    code: Mapped[str] = mapped_column(Text)
    explanation: Mapped[str] = mapped_column(Text)
    compile_args: Mapped[str] = mapped_column(Text)  # JSON list
    targets: Mapped[str | None] = mapped_column(Text)  # JSON list; NULL: not bound to targets
    context: Mapped[str | None] = mapped_column(Text)  # JSON object; NULL: never verified
    statistics: Mapped[str] = mapped_column(Text)  # JSON object
    model: Mapped[str] = mapped_column(Text)
    trace: Mapped[str] = mapped_column(Text)  # JSON
    origin: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(Text)  # a RewriteState value
    suspect: Mapped[str] = mapped_column(Text, default="", server_default="")
    created_at: Mapped[str] = mapped_column(Text)
    # sha256 over file, region hash, code, compile args and targets: imports are idempotent.
    content_key: Mapped[str] = mapped_column(Text)
    decisions: Mapped[list[DecisionRow]] = relationship(order_by="DecisionRow.id")
    verifications: Mapped[list[VerificationRow]] = relationship(order_by="VerificationRow.id")


class DecisionRow(Base):
    __tablename__ = "decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    rewrite_id: Mapped[int] = mapped_column(
        ForeignKey("rewrites.id", ondelete="CASCADE"), index=True
    )
    from_state: Mapped[str] = mapped_column(Text)
    to_state: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text)
    at: Mapped[str] = mapped_column(Text)  # ISO-8601 UTC
    forced: Mapped[bool] = mapped_column(Boolean)


class VerificationRow(Base):
    """One independent verification of a rewrite (`nvcc-opt verify`, or optimize's final one)."""

    __tablename__ = "verifications"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    rewrite_id: Mapped[int] = mapped_column(
        ForeignKey("rewrites.id", ondelete="CASCADE"), index=True
    )
    at: Mapped[str] = mapped_column(Text)  # ISO-8601 UTC
    passed: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[str] = mapped_column(Text)  # the verdict's status
    reasons: Mapped[str] = mapped_column(Text)  # JSON list
    statistics: Mapped[str] = mapped_column(Text)  # JSON object
    context: Mapped[str | None] = mapped_column(Text)  # JSON CompileContext verified with
    machine: Mapped[str] = mapped_column(Text)  # host and GPU it ran on
