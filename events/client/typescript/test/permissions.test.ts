// A worker with the permissions of a deployment with untrusted workers:
// in an account of its own, reaching the processors' account only through
// service imports, allowed to publish its triggers, the tool definition
// requests and the direct gets of the skill object store's stream, nothing
// else; allowed to subscribe under its own inbox prefix only. Its store
// skills are materialised all the same, and it is refused nothing.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";

import { connect, isStoreSkill, resourcePath, searchValue, skillTool, type Client } from "../src/index.js";
import { fetchObject } from "../src/materialize.js";
import { here, NatsServer, removeTree, Serve, tempDir, writeSkill } from "./helpers.js";

const pw = { processor: randomBytes(16).toString("hex"), operator: randomBytes(16).toString("hex"), worker: randomBytes(16).toString("hex") };

/** What the worker may publish: exactly these, the imports of its account. */
const WORKER_PUBLISH = [
  "ev.*.agent.pre-step",
  "ev.*.tool.call.skill",
  "ev.*.tool.call.skill_search",
  "ev.*.context.compact",
  "skillstream.tool.definition",
  "skillstream.tool.definitions",
  "$JS.API.DIRECT.GET.OBJ_SKILLS",
  "$JS.API.DIRECT.GET.OBJ_SKILLS.>",
];

const q = (s: string) => JSON.stringify(s);

const config = `
jetstream {}
accounts {
  SKILLSTREAM {
    jetstream: enabled
    users: [
      { user: processor, password: ${q(pw.processor)} }
      { user: operator, password: ${q(pw.operator)} }
    ]
    exports: [
${WORKER_PUBLISH.map((s) => `      { service: ${q(s)}, accounts: [WORKERS] }`).join("\n")}
      { stream: "_INBOX.>", accounts: [WORKERS] }
    ]
  }
  WORKERS {
    imports: [
${WORKER_PUBLISH.map((s) => `      { service: { account: SKILLSTREAM, subject: ${q(s)} } }`).join("\n")}
      { stream: { account: SKILLSTREAM, subject: "_INBOX.>" } }
    ]
    users: [
      {
        user: worker
        password: ${q(pw.worker)}
        permissions: {
          publish: { allow: [${WORKER_PUBLISH.map(q).join(", ")}] }
          subscribe: { allow: ["_INBOX.worker.>"] }
        }
      }
    ]
  }
}
`;

let nats: NatsServer;
let serve: Serve;
let work: string;
before(async () => {
  nats = await NatsServer.start(config);
  serve = await Serve.start(["--skill-search"], {
    url: nats.url,
    serve: { user: "processor", pass: pw.processor },
    admin: { user: "operator", pass: pw.operator },
  });
  work = tempDir("perm");
  const src = join(work, "src");
  writeSkill(src, "big-skill", "A skill of many chunks.", "Read data/table.txt.\n");
  mkdirSync(join(src, "big-skill", "data"), { recursive: true });
  // Larger than the object store's chunks (128 KiB): read in several.
  const table = Array.from({ length: 12_000 }, (_, i) => `row ${i} ${randomBytes(6).toString("hex")}`).join("\n") + "\n";
  writeFileSync(join(src, "big-skill", "data", "table.txt"), table);
  await serve.cli("skills", "push", src);
});
after(async () => {
  await serve?.stop();
  await nats?.stop();
  if (work) removeTree(work);
});

/** The worker's connection, and the permission errors the server sends it. */
async function worker(): Promise<{ nc: NatsConnection; refused: string[] }> {
  const nc = await natsConnect({ servers: nats.url, user: "worker", pass: pw.worker, inboxPrefix: "_INBOX.worker" });
  const refused: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error") refused.push(String(s.error));
  })();
  return { nc, refused };
}

test("a worker that may publish only its triggers and the object stream's direct gets materialises store skills", async () => {
  const { nc, refused } = await worker();
  let c: Client | undefined;
  try {
    c = await connect({ connection: nc, inboxPrefix: "_INBOX.worker" });
    const resourceDir = join(work, "res");
    const r = await c.callSkill({ session: "perm1", call: "c1", args: { name: "big-skill" }, resourceDir }, { timeoutMs: 30_000 });
    assert.equal(r.isError, false, r.text);
    assert.ok(isStoreSkill(r));
    const dir = resourcePath(resourceDir, "big-skill", r.value!.digest!);
    const table = readFileSync(join(dir, "data", "table.txt"), "utf8");
    assert.equal(table.split("\n").length, 12_001);
    assert.ok(table.length > 200_000);
    assert.match(readFileSync(join(dir, "SKILL.md"), "utf8"), /name: big-skill/);

    // The object really is several chunks (read with the operator's rights).
    const admin = await serve.conn();
    try {
      const info = await (await new Objm(admin).open("SKILLS")).info(r.value!.digest!);
      assert.ok(info && info.chunks >= 2, `${info?.chunks} chunks`);
    } finally {
      await admin.close();
    }

    // The rest of a worker's work under the same permissions.
    const d = await c.preStep({ session: "perm1", step: "1", tools: [skillTool()] }, { timeoutMs: 30_000 });
    assert.equal(d.outcome, "appended");
    assert.equal((await c.toolDefinition()).name, "skill");
    assert.deepEqual(
      (await c.toolDefinitions()).map((t) => t.name),
      ["skill", "skill_search"],
    );
    const found = await c.searchSkills({ session: "perm1", call: "s1", args: { query: "many chunks" } }, { timeoutMs: 30_000 });
    assert.deepEqual(searchValue(found)?.results.map((e) => e.name), ["big-skill"]);

    // A missing object is told apart from a refusal: 404 through the import.
    const direct = (await jetstreamManager(nc, { checkAPI: false })).direct;
    await assert.rejects(fetchObject(direct, "SKILLS", "b".repeat(64)), /not in the skill object store/);
    assert.equal(refused.length, 0, `the worker was refused: ${refused.join("; ")}`);

    // Whereas what the object store's own reader asks (the stream's info,
    // then a consumer) is refused: the permissions bite.
    await assert.rejects((await jetstreamManager(nc, { checkAPI: false, timeout: 1000 })).streams.info("OBJ_SKILLS"));
    await assert.rejects(new Objm(jetstream(nc, { timeout: 1000 })).open("SKILLS"));
    assert.ok(refused.some((e) => e.includes("$JS.API.STREAM.INFO.OBJ_SKILLS")), refused.join("; "));
    assert.equal(c.stats().droppedAnswers, 0);
  } finally {
    await c?.close();
    await nc.close();
  }
});

test("the example worker, given SKILLSTREAM_USER and SKILLSTREAM_PASSWORD, is answered on the user's own inboxes", async () => {
  const run = promisify(execFile);
  const env = { ...process.env, SKILLSTREAM_URL: nats.url, SKILLSTREAM_USER: "worker", SKILLSTREAM_PASSWORD: pw.worker };
  const { stdout } = await run(process.execPath, [join(here, "..", "examples", "worker.js"), work], { env, timeout: 60_000 });
  assert.ok(stdout.includes("pre-step: appended\n"), stdout);
  assert.ok(stdout.includes("- `big-skill`: A skill of many chunks."), stdout);
  // Without them it connects as no one, which this server refuses.
  const { SKILLSTREAM_USER: _u, SKILLSTREAM_PASSWORD: _p, ...anonymous } = env;
  await assert.rejects(run(process.execPath, [join(here, "..", "examples", "worker.js"), work], { env: anonymous, timeout: 60_000 }));
});
