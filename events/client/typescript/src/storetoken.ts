// Read-your-writes tokens of the skill store, as the Go package events
// defines them (StoreToken): the index revision a push wrote and the epoch
// of the store's buckets it counts in, which a trigger carries as
// minStoreRevision and minStoreEpoch. `skillstream skills push` prints
// both ("store revision N epoch E"; with --json also "token": "E:N").

/** A store revision of the buckets of one epoch; epoch "" stands for any epoch. */
export interface StoreToken {
  epoch: string;
  revision: number;
}

const EPOCH = /^[A-Za-z0-9_-]{1,64}$/;
const REVISION = /^[0-9]+$/;

/** Whether epoch can name an epoch of the store's buckets (1 to 64 of A-Z a-z 0-9 _ -). */
export function validStoreEpoch(epoch: string): boolean {
  return EPOCH.test(epoch);
}

/** The token as skills push prints it: "<epoch>:<revision>", or the revision alone without an epoch. */
export function formatStoreToken(t: StoreToken): string {
  return t.epoch === "" ? String(t.revision) : `${t.epoch}:${t.revision}`;
}

/**
 * Reads a token as skills push prints it: "<epoch>:<revision>" (its --json
 * output's "token"), or a revision alone (any epoch). Throws a TypeError
 * that says what is wrong.
 */
export function parseStoreToken(s: string): StoreToken {
  const i = s.indexOf(":");
  const epoch = i < 0 ? "" : s.slice(0, i);
  const rev = i < 0 ? s : s.slice(i + 1);
  if (i >= 0 && !validStoreEpoch(epoch)) {
    throw new TypeError(`store token ${JSON.stringify(s.slice(0, 80))}: the epoch before the colon is not a store epoch (1 to 64 of A-Z a-z 0-9 _ -)`);
  }
  const n = Number(rev);
  if (!REVISION.test(rev) || !Number.isSafeInteger(n)) {
    throw new TypeError(`store token ${JSON.stringify(s.slice(0, 80))}: want <epoch>:<revision> or a revision, as skills push prints them`);
  }
  return { epoch, revision: n };
}
