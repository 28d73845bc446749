export { IncompatibleAdapterError, LORA_SAFETENSORS_FORMAT, readLoraArtifact, type LoraArtifactInfo } from './lora-artifact.js';
export { ArtifactIntegrityError, BlobCheckpointStore, LocalCheckpointStore, openCheckpointStore, sha256Hex, type CheckpointArtifact, type CheckpointStore } from './store.js';
export { checkCheckpoint, followCheckpoints, NOTHING_FOLLOWED, type CheckpointRecord, type FollowedCheckpoints, type FollowStep } from './follower.js';
export { answerCheckpointRequest, serveCheckpointChannel, type ChannelReply } from './channel.js';
