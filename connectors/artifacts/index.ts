export { BlobTreeStore, LocalTreeStore, openTreeStore, resolveStoredTrees, storeLargeTrees, treeBytes, type TreeStore } from './tree-store.js';
