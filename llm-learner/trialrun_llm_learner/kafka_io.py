"""Topic values through the schema registry (confluent-kafka's JSON serdes), and changelog-backed state stores.

The framing is the Confluent wire format the TypeScript side writes (connectors/registry/serde.ts): magic byte
0, a 4-byte schema id, the JSON. Values are read with the writer's registered schema and written with the
subject's latest registered schema (registered by the TypeScript build, whose zod contracts are the source of
truth), never auto-registering one of our own.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Generic, Iterator, Optional, TypeVar

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

V = TypeVar("V")

#: Seconds one registry request may take. The client's default is no limit: a request the registry never answers
#: would hang the learner for good (with a transaction open). With a limit, the client retries the request
#: (max.retries, with backoff) and then raises.
REGISTRY_TIMEOUT_S = 30.0


class DecodeError(ValueError):
    """Bytes that are not a valid record of their topic: dead-lettered, never retried."""


class TopicCodec:
    """Encodes and decodes one deployment's topic values; `topics` maps logical keys to physical names."""

    def __init__(self, registry_url: str, topics: dict[str, str]):
        self.client = SchemaRegistryClient({"url": registry_url, "timeout": REGISTRY_TIMEOUT_S})
        self.topics = topics
        self._deserializer = JSONDeserializer(None, schema_registry_client=self.client)
        self._serializers: dict[str, JSONSerializer] = {}
        self._subject_of_id: dict[tuple[str, int], bool] = {}

    def subject(self, key: str) -> str:
        return f"{self.topics[key]}-value"

    def encode(self, key: str, value: dict[str, Any]) -> bytes:
        serializer = self._serializers.get(key)
        if serializer is None:
            latest = self.client.get_latest_version(self.subject(key))
            serializer = JSONSerializer(latest.schema.schema_str, self.client, conf={"auto.register.schemas": False, "use.latest.version": True})
            self._serializers[key] = serializer
        data = serializer(value, SerializationContext(self.topics[key], MessageField.VALUE))
        assert data is not None
        return data

    def decode(self, key: str, data: Optional[bytes]) -> dict[str, Any]:
        what = f"a {key} record"
        if data is None:
            raise DecodeError(f"{what} has no value (tombstone)")
        if len(data) < 5 or data[0] != 0:
            raise DecodeError(f"{what} could not be decoded (not in the registry wire format: no magic byte 0 and schema id)")
        schema_id = int.from_bytes(data[1:5], "big")
        if not self._belongs_to(key, schema_id):
            raise DecodeError(f"{what} could not be decoded: its schema id {schema_id} is not a version of {self.subject(key)}")
        try:
            value = self._deserializer(data, SerializationContext(self.topics[key], MessageField.VALUE))
        except Exception as error:  # the serde raises SerializationError and others for bad JSON or schema breaks
            raise DecodeError(f"{what} could not be decoded: {error}") from error
        if not isinstance(value, dict):
            raise DecodeError(f"{what} is not a JSON object")
        return value

    def _belongs_to(self, key: str, schema_id: int) -> bool:
        """A record framed with another subject's schema must not be read as this topic's."""
        cached = self._subject_of_id.get((key, schema_id))
        if cached is None:
            try:
                subjects = self.client.get_subjects_by_schema_id(schema_id)
            except Exception:
                subjects = []
            cached = self.subject(key) in subjects
            self._subject_of_id[(key, schema_id)] = cached
        return cached


class ChangelogStore(Generic[V]):
    """
    A key-value store whose changes go to a compacted changelog topic in the same transaction as the outputs
    and offsets that caused them (as pipelines/runtime/state-store.ts): restored after a crash to exactly the
    state that matches the committed offsets. Values are JSON; writes are staged until `commit`.
    """

    def __init__(self, name: str, topic: str):
        self.name = name
        self.topic = topic
        self._committed: dict[str, V] = {}
        self._staged: dict[str, Optional[V]] = {}

    def get(self, key: str) -> Optional[V]:
        return self._staged[key] if key in self._staged else self._committed.get(key)

    def put(self, key: str, value: V) -> None:
        self._staged[key] = value

    def delete(self, key: str) -> None:
        self._staged[key] = None

    def items(self) -> list[tuple[str, V]]:
        view = dict(self._committed)
        for key, value in self._staged.items():
            if value is None:
                view.pop(key, None)
            else:
                view[key] = value
        return list(view.items())

    def changelog(self) -> Iterator[tuple[str, Optional[bytes]]]:
        for key, value in self._staged.items():
            yield key, None if value is None else json.dumps(value, separators=(",", ":")).encode()

    def commit(self) -> None:
        for key, value in self._staged.items():
            if value is None:
                self._committed.pop(key, None)
            else:
                self._committed[key] = value
        self._staged.clear()

    def discard(self) -> None:
        self._staged.clear()

    def restore(self, consumer_config: dict[str, Any], timeout_s: float = 60.0) -> int:
        """Reads the changelog's committed records to its end (read_committed), replacing what is held."""
        self._committed.clear()
        self._staged.clear()
        consumer = Consumer({**consumer_config, "group.id": f"{self.topic}.restore", "enable.auto.commit": False, "isolation.level": "read_committed"})
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=timeout_s)
            if high <= low:
                return 0
            consumer.assign([TopicPartition(self.topic, 0, low)])
            # The end of a transactional topic under read_committed is its last stable offset; the high
            # watermark may sit past an abort marker, so the position (not a record) decides when to stop.
            idle = 0
            while True:
                position = consumer.position([TopicPartition(self.topic, 0)])[0].offset
                if position >= high:
                    break
                message = consumer.poll(1.0)
                if message is None:
                    # Nothing but abort and commit markers left before the high watermark.
                    idle += 1
                    if idle >= 5:
                        break
                    continue
                idle = 0
                if message.error():
                    raise KafkaException(message.error())
                key = message.key().decode() if message.key() is not None else None
                if key is None:
                    continue
                value = message.value()
                if value is None:
                    self._committed.pop(key, None)
                else:
                    self._committed[key] = json.loads(value)
            return len(self._committed)
        finally:
            consumer.close()


def ensure_topics(admin_config: dict[str, Any], topics: list[str], on_created: Callable[[str], None] = lambda _: None) -> None:
    """Creates the compacted single-partition changelog topics that are missing (idempotent)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(admin_config)
    existing = set(admin.list_topics(timeout=30).topics)
    missing = [t for t in topics if t not in existing]
    if not missing:
        return
    futures = admin.create_topics([NewTopic(t, num_partitions=1, replication_factor=-1, config={"cleanup.policy": "compact"}) for t in missing])
    for topic, future in futures.items():
        try:
            future.result()
            on_created(topic)
        except KafkaException as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise
