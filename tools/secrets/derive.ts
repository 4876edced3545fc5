/** `pnpm secrets:derive`: writes the digests of the repository's published secrets for production to refuse. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { derivePublishedDigests, DIGESTS_FILE, renderDigestsModule, ROOT } from './published-secrets';

const digests = derivePublishedDigests();
writeFileSync(path.join(ROOT, DIGESTS_FILE), renderDigestsModule(digests));
process.stdout.write(`${digests.length} published secret-like strings -> ${DIGESTS_FILE}\n`);
