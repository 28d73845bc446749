export { BlobTreeStore, LocalTreeStore, openTreeStore, resolveStoredTrees, storeLargeTrees, inlineTreeBytes, treeBytes, type TreeStore } from './tree-store.js';
