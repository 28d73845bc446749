export { ArtifactIntegrityError, LocalCheckpointStore, openCheckpointStore, sha256Hex, type CheckpointArtifact, type CheckpointStore } from './store.js';
