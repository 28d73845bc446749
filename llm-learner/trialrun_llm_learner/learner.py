"""The consume -> join -> update -> publish loop, exactly once.

Trajectories and rewards are joined by trajectory id in a changelog-backed store; every `batch_size` joined
samples the trainer takes one update, writes the adapter artifact and its optimizer state to the checkpoint
store, and one Kafka transaction then commits the PolicyCheckpoint record, the stores' changes and the consumed
offsets together. A learner killed at any moment restarts from the last committed transaction: the batch it
was on is redone from the same records, and a version is never published twice.
"""

from __future__ import annotations

import base64
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from .batch import BatchRows, build_rows, failure_advantage
from .checkpoint import LORA_FORMAT, STATE_FOLDER, adapter_bytes, adapter_metadata, file_sha256, read_adapter
from .kafka_io import ChangelogStore, DecodeError, TopicCodec, ensure_topics
from .options import LearnerOptions
from .samples import TrainingSample, llm_training_samples
from .store_channel import Checkpoints, open_checkpoints

#: Logical topic names (schemas/topics.ts).
TOPICS = {"trajectories": "trajectories", "rewards": "rewards", "policyCheckpoints": "policy-checkpoints", "deadLetters": "dead-letters"}
PROCESSOR = "llm-learner"


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def log(line: str) -> None:
    sys.stderr.write(f"[{PROCESSOR}] {line}\n")
    sys.stderr.flush()


@dataclass
class Output:
    topic_key: str
    key: str
    value: dict[str, Any]


class Join:
    """
    The join of trajectories and rewards (the `pending` store) and the trainer's committed state (the `trainer`
    store); pure bookkeeping, so it is tested without Kafka or a model. Entries are JSON objects:
    pending[trajectoryId] = {samples?, fallbackVersion?, reward?, advantage?, skip?, seen: [...]}.
    """

    def __init__(self, options: LearnerOptions, pending: ChangelogStore, trainer: ChangelogStore):
        self.options = options
        self.pending = pending
        self.trainer = trainer

    def state(self) -> dict[str, Any]:
        return self.trainer.get(self.options.policy_id) or {"version": 0, "adapter": None, "optimizer": None, "staleDropped": 0, "staleTrajectories": 0}

    def add(self, topic_key: str, value: dict[str, Any]) -> None:
        trajectory_id = value["trajectoryId"]
        entry = dict(self.pending.get(trajectory_id) or {})
        seen = set(entry.get("seen", []))
        if topic_key == "trajectories":
            seen.add("trajectory")
            samples = llm_training_samples(value["steps"]) if value["policyId"] == self.options.policy_id else []
            if not samples:
                # Another policy's episode, or one without token ids: nothing to train on.
                entry["skip"] = True
            else:
                entry["samples"] = [s.to_wire() for s in samples]
                entry["fallbackVersion"] = value["lineage"].get("policyVersion") or 0
        else:
            # Re-scored rewards only compare verifier versions; rewards without signal never train.
            if value.get("rescoreId") is not None:
                return
            seen.add("reward")
            if (value.get("disposition") or "learn") != "learn":
                entry["skip"] = True
            else:
                entry["reward"] = float(value["reward"])
                entry["advantage"] = float(value["advantage"])
                entry["groupMean"] = float(value["groupMean"])
        if entry.get("skip"):
            # Kept (without its samples) until both sides came, so the late side is recognised and dropped too.
            if seen == {"trajectory", "reward"}:
                self.pending.delete(trajectory_id)
            else:
                self.pending.put(trajectory_id, {"skip": True, "seen": sorted(seen)})
            return
        entry["seen"] = sorted(seen)
        self.pending.put(trajectory_id, entry)

    def ready(self) -> list[tuple[str, dict[str, Any]]]:
        return [(k, v) for k, v in self.pending.items() if not v.get("skip") and "samples" in v and v.get("advantage") is not None]

    def take_batch(self) -> Optional[tuple[list[dict[str, Any]], BatchRows, dict[str, int]]]:
        """The oldest `batch_size` joined samples as rows (removed from `pending`), or None while too few."""
        ready = self.ready()
        if len(ready) < self.options.batch_size:
            return None
        batch = ready[: self.options.batch_size]
        state = self.state()
        rows = BatchRows()
        counts = {"trained": 0, "staleTrajectories": 0, "empty": 0}
        for key, entry in batch:
            self.pending.delete(key)
            before_rows, before_turns, before_stale = len(rows.rows), rows.turns, rows.stale_turns
            # An entry joined by an older learner has no group mean: its turns keep the outcome's advantage.
            earlier = failure_advantage(entry["reward"], entry["advantage"], entry["groupMean"]) if self.options.earlier_turns_failed and "groupMean" in entry else None
            build_rows(
                [TrainingSample.from_wire(s) for s in entry["samples"]],
                entry["advantage"],
                earlier_advantage=earlier,
                fallback_version=entry.get("fallbackVersion", 0),
                current_version=state["version"],
                max_staleness=self.options.max_staleness,
                max_sequence_tokens=self.options.max_sequence_tokens,
                into=rows,
            )
            if len(rows.rows) > before_rows:
                counts["trained"] += 1
            elif rows.stale_turns - before_stale == rows.turns - before_turns:
                counts["staleTrajectories"] += 1
            else:
                counts["empty"] += 1
        return [entry for _, entry in batch], rows, counts


class LlmLearner:
    def __init__(self, options: LearnerOptions):
        self.options = options
        self.topics = {key: options.topic(name) for key, name in TOPICS.items()}
        self.pending: ChangelogStore = ChangelogStore("pending", options.changelog("pending"))
        self.trainer_store: ChangelogStore = ChangelogStore("trainer", options.changelog("trainer"))
        self.join = Join(options, self.pending, self.trainer_store)
        self.stores = [self.pending, self.trainer_store]
        self.codec = TopicCodec(options.registry_url, self.topics)
        self.stopping = False
        self.published = 0
        self.kafka = {"bootstrap.servers": options.brokers}
        # Opened by _open; closed by run, however far _open got.
        self.consumer: Optional[Consumer] = None
        self.checkpoints: Optional[Checkpoints] = None

    # -- set-up ---------------------------------------------------------------------------------------------

    def _open(self) -> None:
        from .trainer import Trainer, peft_config_json

        started = time.perf_counter()
        self.checkpoints = open_checkpoints(self.options.checkpoints, self.options.checkpoint_channel_fd, log, lambda: self.stopping)
        self.base_sha256 = file_sha256(self.options.gguf)
        self.trainer = Trainer(self.options, gguf_sha256=self.base_sha256)
        self.peft_config = peft_config_json(self.trainer.config)
        log(f"loaded {self.options.gguf} with a LoRA adapter of {self.trainer.trainable_parameters} parameters in {time.perf_counter() - started:.1f} s")
        ensure_topics(self.kafka, [store.topic for store in self.stores])
        self.producer = Producer({**self.kafka, "transactional.id": self.options.transactional_id, "transaction.timeout.ms": 120_000, "enable.idempotence": True})
        # Fences a predecessor with the same transactional id and aborts what it left open, before the stores are read.
        self.producer.init_transactions(60)
        self._restore()
        self.consumer = Consumer({
            **self.kafka,
            "group.id": self.options.consumer_group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": self.options.session_timeout_ms,
            # An update on a busy CPU takes minutes; the group must not think the learner died meanwhile.
            "max.poll.interval.ms": 1_800_000,
        })
        self.consumer.subscribe([self.topics["trajectories"], self.topics["rewards"]])

    def _restore(self) -> None:
        for store in self.stores:
            store.restore({**self.kafka})
        state = self.join.state()
        adapter = optimizer = None
        if state["adapter"] is not None:
            adapter, metadata = read_adapter(self.checkpoints.read(state["adapter"]["uri"], state["adapter"]["sha256"]))
            if metadata.get("base_sha256") != self.base_sha256:
                raise RuntimeError(f"the committed adapter v{state['version']} was trained on another GGUF (base_sha256 {metadata.get('base_sha256')}, this one {self.base_sha256})")
            optimizer = self.checkpoints.read(state["optimizer"]["uri"], state["optimizer"]["sha256"])
        self.trainer.load(adapter, optimizer)
        log(f"restored version {state['version']} and {len(self.join.ready())} joined samples waiting")

    # -- the loop -------------------------------------------------------------------------------------------

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: setattr(self, "stopping", True))
        try:
            self._open()
            log(f"running on {self.topics['trajectories']} + {self.topics['rewards']}, batches of {self.options.batch_size}, checkpoints to {self.checkpoints.location}")
            while not self.stopping and not self._max_updates_reached():
                self._process(self.consumer.consume(num_messages=self.options.max_records_per_transaction, timeout=1.0))
            if self._max_updates_reached():
                log(f"published {self.published} checkpoints (max_updates); stopping")
        finally:
            if self.consumer is not None:
                self.consumer.close()
            if self.checkpoints is not None:
                self.checkpoints.close()
        return 0

    def _process(self, messages: Sequence[Any]) -> None:
        """Handles consumed messages in order; each version commits as soon as it is trained.

        A version's transaction carries the offsets of the messages handled so far, never past one whose samples
        it has not trained on: a learner whose offsets are past every input has trained on all it will (the loop's
        end condition reads exactly that). Committing each version at once, not after the rest of the messages in
        hand, lets weight sync load it while the next batch trains, and a SIGTERM waits for one update at most.
        """
        offsets: dict[tuple[str, int], int] = {}
        # Full batches a restored join may hold: an earlier learner stopped by max_updates left them.
        outputs = self._update_ready()
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(error)
            offsets[(message.topic(), message.partition())] = message.offset() + 1
            outputs.extend(self._handle(message))
            outputs.extend(self._update_ready())
            if any(output.topic_key == "policyCheckpoints" for output in outputs):
                if not self._commit(offsets, outputs):
                    return  # rewound: the messages in hand are consumed again from the committed offsets
                offsets, outputs = {}, []
                if self.stopping or self._max_updates_reached():
                    return  # the messages not handled are consumed again by the next learner
        if offsets or outputs or any(True for s in self.stores for _ in s.changelog()):
            self._commit(offsets, outputs)

    def _handle(self, message: Any) -> list[Output]:
        key = "trajectories" if message.topic() == self.topics["trajectories"] else "rewards"
        try:
            value = self.codec.decode(key, message.value())
        except DecodeError as error:
            return [self._dead_letter(message, error, "decode")]
        try:
            self.join.add(key, value)
        except (KeyError, TypeError, ValueError) as error:
            # A record valid by its schema that this learner cannot use: kept as a dead letter, never a crash.
            return [self._dead_letter(message, error, "handle")]
        return []

    def _dead_letter(self, message: Any, error: Exception, stage: str) -> Output:
        log(f"dead-lettered {message.topic()}[{message.partition()}]@{message.offset()}: {type(error).__name__}: {error}")
        encode = lambda data: None if data is None else base64.b64encode(data).decode()  # noqa: E731
        return Output("deadLetters", message.topic(), {
            "processor": PROCESSOR,
            "sourceTopic": message.topic(),
            "partition": message.partition(),
            "offset": str(message.offset()),
            "key": encode(message.key()),
            "value": encode(message.value()),
            "headers": {k: base64.b64encode(v or b"").decode() for k, v in (message.headers() or [])},
            "error": {"name": type(error).__name__, "message": str(error), "retriable": False, "stage": stage},
            "attempts": 1,
            "failedAt": now_iso(),
        })

    def _update_ready(self) -> list[Output]:
        """One update (a version) for every full batch the join holds, up to max_updates.

        After one message that is at most one batch; a join restored from an older learner's state may hold more.
        """
        outputs: list[Output] = []
        while not self._max_updates_reached(outputs) and (taken := self.join.take_batch()) is not None:
            outputs.extend(self._update(*taken))
        return outputs

    def _max_updates_reached(self, uncommitted: Sequence[Output] = ()) -> bool:
        """Whether the versions published, and those about to be, reach max_updates (0: no bound)."""
        made = self.published + sum(1 for o in uncommitted if o.topic_key == "policyCheckpoints")
        return bool(self.options.max_updates) and made >= self.options.max_updates

    def _update(self, entries: list[dict[str, Any]], rows: BatchRows, counts: dict[str, int]) -> list[Output]:
        state = self.join.state()
        stale_dropped = state.get("staleDropped", 0) + rows.stale_turns
        stale_trajectories = state.get("staleTrajectories", 0) + counts["staleTrajectories"]
        if not rows.rows:
            # Nothing fresh: a new version would change nothing and make every sample in flight one version staler.
            self.trainer_store.put(self.options.policy_id, {**state, "staleDropped": stale_dropped, "staleTrajectories": stale_trajectories})
            return []
        result = self.trainer.update(rows)
        version = state["version"] + 1
        metadata = adapter_metadata(peft_config=self.peft_config, base_model=self.options.base_model, base_sha256=self.base_sha256, version=version, parent_version=state["version"])
        # Both are stored (on S3: published by the launcher) before the transaction that names them opens.
        artifact = self.checkpoints.put(self.options.policy_id, version, adapter_bytes(self.trainer.adapter_state(), metadata), LORA_FORMAT)
        optimizer = self.checkpoints.put(STATE_FOLDER, version, self.trainer.optimizer_bytes(), None, ".optimizer.pt")
        self.trainer_store.put(self.options.policy_id, {
            "version": version,
            "adapter": {"uri": artifact["uri"], "sha256": artifact["sha256"]},
            "optimizer": {"uri": optimizer["uri"], "sha256": optimizer["sha256"]},
            "staleDropped": 0,
            "staleTrajectories": 0,
        })
        rewards = [e.get("reward", 0.0) for e in entries]
        checkpoint = {
            "policyId": self.options.policy_id,
            "version": version,
            "parentVersion": state["version"],
            "featureNames": [],
            "weights": [],
            "sha256": artifact["sha256"],
            "artifact": artifact,
            "metrics": {
                "samples": counts["trained"],
                "meanReward": sum(rewards) / len(rewards),
                "meanAbsAdvantage": sum(abs(row.advantage) for row in rows.rows) / len(rows.rows),
                "gradNorm": result.grad_norm,
                "staleDropped": stale_dropped,
                "extra": {
                    "loss": result.loss,
                    "kl": result.kl,
                    "clipFraction": result.clip_fraction,
                    "tokens": result.tokens,
                    "offPolicyTokens": result.off_policy_tokens,
                    "truncatedWeights": result.truncated_weights,
                    "meanRatio": result.mean_ratio,
                    "sequences": len(rows.rows),
                    "turns": rows.turns,
                    "cutTokens": rows.cut_tokens,
                    "staleTrajectories": stale_trajectories,
                    "emptyTrajectories": counts["empty"],
                    "skippedSteps": result.skipped_steps,
                    "updateSeconds": result.seconds,
                },
            },
            "lineage": {"taskId": "all", "attempt": 0, "runId": self.options.run_id, "policyVersion": version, "sandboxImageDigest": None, "verifierVersion": None, "createdAt": now_iso()},
        }
        # Sampled tokens past --max-sequence-tokens are not trained on: said here, not only in the checkpoint's metrics.
        cut = f", {rows.cut_tokens} sampled tokens past --max-sequence-tokens {self.options.max_sequence_tokens} cut" if rows.cut_tokens else ""
        log(f"v{version}: {counts['trained']} samples, {result.tokens} tokens{cut}, loss {result.loss:.4f}, grad norm {result.grad_norm:.4f}, {result.seconds:.1f} s")
        return [Output("policyCheckpoints", self.options.policy_id, checkpoint)]

    def _commit(self, offsets: dict[tuple[str, int], int], outputs: list[Output]) -> bool:
        """True once committed; False when the transaction was aborted and the learner rewound to the last commit."""
        # Encoded before the transaction opens: a slow registry must not hold a transaction open to its timeout.
        records = [(self.topics[output.topic_key], output.key.encode(), self.codec.encode(output.topic_key, output.value)) for output in outputs]
        try:
            self.producer.begin_transaction()
            for store in self.stores:
                for key, value in store.changelog():
                    self.producer.produce(store.topic, key=key.encode(), value=value)
            for topic, key, value in records:
                self.producer.produce(topic, key=key, value=value)
            if offsets:
                self.producer.send_offsets_to_transaction([TopicPartition(t, p, o) for (t, p), o in offsets.items()], self.consumer.consumer_group_metadata(), 60)
            self.producer.commit_transaction(60)
        except KafkaException as error:
            kafka_error = error.args[0] if error.args else None
            if kafka_error is None or not getattr(kafka_error, "txn_requires_abort", lambda: False)():
                # Fenced by a newer learner, or a fatal producer error: this instance must stop.
                raise
            log(f"transaction aborted ({kafka_error}); rewinding to the last committed state")
            self.producer.abort_transaction(60)
            self._rewind()
            return False
        for store in self.stores:
            store.commit()
        self.published += sum(1 for o in outputs if o.topic_key == "policyCheckpoints")
        return True

    def _rewind(self) -> None:
        """Back to the last commit: staged store writes dropped, the trainer reloaded, the consumer at the committed offsets."""
        for store in self.stores:
            store.discard()
        self._restore()
        assignment = self.consumer.assignment()
        for partition in self.consumer.committed(assignment, timeout=60):
            self.consumer.seek(partition if partition.offset >= 0 else TopicPartition(partition.topic, partition.partition, OFFSET_BEGINNING))
