#!/usr/bin/env node
// The CLI is compiled TypeScript; `npm run build` (run by the README commands) produces dist/.
import '../dist/cli/main.js';
