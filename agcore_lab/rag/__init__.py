"""Retrieval-augmented generation: documents, the splitter, embeddings, vector stores, pipeline.

Everything here runs offline by default: :class:`RecursiveCharacterSplitter` (chunk for chunk
the same as LangChain's), :class:`HashingEmbedding` (scikit-learn, no download),
:class:`InMemoryVectorStore`, :class:`SqliteVectorStore` or :class:`PostgresVectorStore`
(:func:`open_vector_store` picks the persisted one of a store's backend), tied together by
:class:`RagPipeline`::

    from agcore_lab.rag import RagPipeline
    pipeline = RagPipeline()
    pipeline.ingest_files("docs/", root=".")
    for hit in pipeline.retrieve("how do I roll back a session?"):
        print(round(hit.score, 3), hit.document.metadata["source_id"])

scikit-learn, httpx and torch load on first use, never at import.
"""

from agcore_lab.rag.documents import Document
from agcore_lab.rag.embeddings import Embedding, HashingEmbedding, MockEmbedding
from agcore_lab.rag.open_vectors import open_vector_store
from agcore_lab.rag.openai_embedding import OpenAIEmbedding
from agcore_lab.rag.pipeline import IngestProgress, IngestReport, RagPipeline
from agcore_lab.rag.postgres_vectors import PostgresVectorStore
from agcore_lab.rag.sentence_embedding import SentenceTransformerEmbedding
from agcore_lab.rag.splitter import DEFAULT_SEPARATORS, ChunkSpan, RecursiveCharacterSplitter
from agcore_lab.rag.sqlite_vectors import SqliteVectorStore
from agcore_lab.rag.vectorstores import InMemoryVectorStore, MetadataFilter, SearchHit, VectorStore

__all__ = [
    "DEFAULT_SEPARATORS",
    "ChunkSpan",
    "Document",
    "Embedding",
    "HashingEmbedding",
    "InMemoryVectorStore",
    "IngestProgress",
    "IngestReport",
    "MetadataFilter",
    "MockEmbedding",
    "OpenAIEmbedding",
    "PostgresVectorStore",
    "RagPipeline",
    "RecursiveCharacterSplitter",
    "SearchHit",
    "SentenceTransformerEmbedding",
    "SqliteVectorStore",
    "VectorStore",
    "open_vector_store",
]
