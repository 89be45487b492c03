// The live page of zkgen serve: it draws the spec's topology (the boxes of
// zkgen graph) and, in each resource, the state of its instances, from the
// server-sent events of /events. Plain DOM, no framework, no build step;
// every value from ZooKeeper is set as text, never as markup.
"use strict";

let state = null;      // the last State received
let receivedAt = 0;    // when (this browser's clock)

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// age renders seconds as "4s", "3m12s", "2h05m".
function age(s) {
  s = Math.max(0, Math.round(s));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(s / 3600) + "h" + String(Math.floor(s % 3600 / 60)).padStart(2, "0") + "m";
}

// ageSpan is a span kept current by tick(): base is the age at the state.
function ageSpan(base) {
  const e = el("span", "age");
  e.dataset.base = String(base);
  return e;
}

// dueSpan is a span kept current by tick() that counts down: "expires in
// 3s", then "lapsed 2s ago". left is the seconds left at the state.
function dueSpan(left) {
  const e = el("span", "age due");
  e.dataset.base = String(left);
  e.dataset.sign = "-1";
  return e;
}

function tick() {
  const gone = (Date.now() - receivedAt) / 1000;
  for (const e of document.querySelectorAll(".age")) {
    const sign = Number(e.dataset.sign || 1);
    const v = Number(e.dataset.base) + sign * gone;
    if (sign > 0) e.textContent = age(v);
    else e.textContent = v < 0 ? "lapsed " + age(-v) + " ago" : "expires in " + age(v);
  }
}

function value(v) {
  if (!v) return "";
  if (v.json !== undefined) return JSON.stringify(v.json);
  if (v.text !== undefined) return JSON.stringify(v.text);
  if (v.base64 !== undefined) return "base64:" + v.base64;
  return "";
}

// words renders a payload for a reader, as inspect's Value.Words does: a
// JSON object's fields as "key value" pairs separated by " · ", a string
// as itself, anything else as value() shows it.
function words(v) {
  if (!v) return "";
  if (v.text !== undefined) return v.text;
  const j = v.json;
  if (typeof j === "string") return j;
  if (j !== null && typeof j === "object" && !Array.isArray(j) && Object.keys(j).length) {
    return Object.entries(j).map(([k, x]) => k + " " + (typeof x === "string" ? x : JSON.stringify(x))).join(" · ");
  }
  return value(v);
}

function who(c) {
  const parts = [];
  if (c.host) parts.push(c.host);
  if (c.pid) parts.push("pid " + c.pid);
  if (c.purpose) parts.push(c.purpose);
  if (!parts.length) parts.push(c.node.split("/").pop());
  return parts.join(" · ");
}

function contenderList(cls, label, cs) {
  const ul = el("ul", cls + "s");
  for (const c of cs) {
    const li = el("li", cls);
    li.append(el("span", "role", c.mode ? label + " (" + c.mode + ")" : label), " ", el("span", "who", who(c)), " ");
    li.append(ageSpan(c.age_seconds));
    if (c.revoke_requested) li.append(el("span", "warn", " revoke requested"));
    ul.append(li);
  }
  return ul;
}

// ranges renders sorted partition numbers as "0-3, 7, 9-12".
function ranges(ns) {
  const out = [];
  for (let i = 0; i < ns.length; i++) {
    let j = i;
    while (j + 1 < ns.length && ns[j + 1] === ns[j] + 1) j++;
    out.push(i === j ? String(ns[i]) : ns[i] + "-" + ns[j]);
    i = j;
  }
  return out.join(", ");
}

// deadLettersShown is how many of a queue's dead letters the page lists
// (the newest moves last); /api/state and zkgen inspect have them all.
const deadLettersShown = 5;

// deadLetters lists a queue's dead letters: what each held, why it died
// and when it was moved.
function deadLetters(box, ds) {
  box.append(el("div", "dead warn", `${ds.length} dead letters`));
  const ul = el("ul", "deadletters");
  for (const d of ds.slice(-deadLettersShown)) {
    const li = el("li", "deadletter");
    li.append(el("span", "payload", words(d.payload)), " · ", el("span", "reason", d.reason || "no reason recorded"),
      " · moved ", ageSpan(d.age_seconds), " ago");
    ul.append(li);
  }
  if (ds.length > deadLettersShown) ul.append(el("li", "muted", `and ${ds.length - deadLettersShown} older (zkgen inspect lists them all)`));
  box.append(ul);
}

// claimsShown is how many of a queue's claims the page lists (the longest
// held first); /api/state and zkgen inspect have them all.
const claimsShown = 5;

// claims lists who holds a queue's items: each consumer (its session, how
// many items, the longest for how long) and the items held longest (which
// session holds each, for how long, which delivery it is).
function claims(box, q) {
  const cons = el("ul", "consumers");
  for (const c of q.consumers || []) {
    const li = el("li", "consumer");
    li.append(el("span", "who", "session " + c.session), ` holds ${c.claimed} ${c.claimed === 1 ? "item" : "items"}, `,
      c.claimed === 1 ? "for " : "the longest for ", ageSpan(c.age_seconds));
    cons.append(li);
  }
  box.append(cons);
  const ul = el("ul", "claims");
  for (const c of (q.claims || []).slice(0, claimsShown)) {
    const li = el("li", "claim");
    li.append(el("span", "item", c.item.split("/").pop()), " held by ", el("span", "who", "session " + c.session),
      " for ", ageSpan(c.age_seconds));
    if (c.attempt > 1) li.append(el("span", "warn", ` · delivery ${c.attempt}`));
    ul.append(li);
  }
  const more = (q.claims || []).length - claimsShown;
  if (more > 0) ul.append(el("li", "muted", `and ${more} more (zkgen inspect lists them all)`));
  box.append(ul);
}

const readers = {
  lock(box, l) {
    const summary = l.leases ? `${l.holders.length}/${l.leases} leases` : (l.holders.length ? "held" : "free");
    box.append(el("div", "summary", summary + (l.waiters.length ? `, ${l.waiters.length} waiting` : "")));
    box.append(contenderList("holder", "holder", l.holders));
    box.append(contenderList("waiter", "waiter", l.waiters));
    if (l.gate) box.append(contenderList("gate", "blocking", [l.gate]));
  },
  lease(box, l) {
    box.append(el("div", "summary", `${l.holders.length}/${l.leases} held`));
    const ul = el("ul", "holders");
    for (const h of l.holders) {
      const li = el("li", "holder");
      const left = (Date.parse(h.expires) - Date.parse(state.taken)) / 1000;
      li.append(el("span", "who", h.holder + (h.host ? " · " + h.host : "")), " ", dueSpan(left));
      ul.append(li);
    }
    box.append(ul);
  },
  queue(box, q) {
    const s = el("div", "summary");
    s.append(el("span", "depth", String(q.depth)), " items");
    if (q.claimed) {
      s.append(`, ${q.claimed} claimed`);
      const n = (q.consumers || []).length;
      if (n) s.append(` by ${n} ${n === 1 ? "consumer" : "consumers"}`);
    }
    if (q.depth) s.append(", oldest ", ageSpan(q.oldest_age_seconds));
    box.append(s);
    if (q.priorities) {
      const ul = el("ul", "priorities");
      for (const p of q.priorities) ul.append(el("li", "priority", `${p.name}: ${p.depth}`));
      box.append(ul);
    }
    if (q.claims && q.claims.length) claims(box, q);
    if (q.dead_letters && q.dead_letters.length) deadLetters(box, q.dead_letters);
  },
  election(box, e) {
    box.append(el("div", "summary leader", e.elected ? `leader ${words(e.payload) || e.leader} · epoch ${e.epoch}` : "no leader"));
    box.append(el("div", "candidates", `${e.candidates.length} candidates`));
  },
  group(box, g) {
    box.append(el("div", "summary", `${g.members.length} members`));
    const ul = el("ul", "members");
    for (const m of g.members) ul.append(el("li", "member", words(m)));
    box.append(ul);
  },
  partitioner(box, p) {
    box.append(el("div", "summary", `${p.partitions} partitions, ${p.unowned.length} unowned`));
    const ul = el("ul", "owners");
    for (const m of p.members) ul.append(el("li", "owner", `${words(m.member)}: ${m.owns.length ? ranges(m.owns) : "nothing"}`));
    box.append(ul);
  },
  barrier(box, b) { box.append(el("div", "summary", b.up ? "up" : "down")); },
  double_barrier(box, d) {
    box.append(el("div", "summary", `${d.participants.length}/${d.size} in` + (d.ready ? ", ready" : "")));
  },
  config(box, c) { box.append(el("div", "summary", c.exists ? `version ${c.version}: ${value(c.value)}` : "unset")); },
  counter(box, c) { box.append(el("div", "summary", String(c.value))); },
  service(box, s) {
    const enabled = s.instances.filter(i => i.enabled && !i.error).length;
    const summary = `${s.instances.length} instances` + (enabled !== s.instances.length ? `, ${enabled} enabled` : "");
    box.append(el("div", enabled ? "summary" : "summary warn", summary));
    const ul = el("ul", "instances");
    for (const i of s.instances) {
      const li = el("li", "svcinstance");
      li.dataset.id = i.id;
      if (i.error) {
        li.append(el("span", "id", i.id), " · ", el("span", "warn", "error: " + i.error));
      } else {
        const addr = (i.address || "(no address)") + (i.port ? ":" + i.port : "") + (i.ssl_port ? " ssl:" + i.ssl_port : "");
        li.append(el("span", "addr", addr), " · ", el("span", "id", i.id));
        if (!i.enabled) li.append(" · ", el("span", "disabled warn", "disabled"));
        if (i.payload) li.append(" · ", el("span", "payload", words(i.payload)));
        if (i.registered) li.append(" · registered ", ageSpan(i.age_seconds || 0), " ago");
      }
      ul.append(li);
    }
    box.append(ul);
  },
  transaction(box, t) {
    box.append(el("div", "summary", t.proposed ? (t.decision || "voting") : "not proposed"));
    const ul = el("ul", "votes");
    for (const v of t.votes) ul.append(el("li", "vote", `${v.participant}: ${v.state}`));
    box.append(ul);
  },
};

function instanceBox(r) {
  const box = el("div", "instance");
  box.dataset.path = r.path;
  // an instance of a parameterised resource is named by its parameters;
  // a resource without any has one instance, at the path shown above
  if (r.params && r.params.length) box.append(el("div", "ipath", r.params.map(p => p.name + "=" + p.value).join(" ")));
  if (r.no_instances) { box.append(el("div", "summary muted", "no instances")); return box; }
  if (r.error) { box.append(el("div", "summary warn", "error: " + r.error)); return box; }
  for (const [key, read] of Object.entries(readers)) {
    if (r[key]) read(box, r[key]);
  }
  return box;
}

function render() {
  document.getElementById("spec").textContent = state.spec + " · " + state.root;
  const status = document.getElementById("status");
  const outage = document.getElementById("outage");
  document.body.classList.toggle("down", !state.zookeeper_up);
  if (state.zookeeper_up) {
    status.textContent = "live" + (state.session ? " · session " + state.session : "") +
      (state.cache ? " · " + state.cache.mode + " watch" : "");
    outage.hidden = true;
  } else {
    status.textContent = "ZooKeeper outage";
    const o = state.outage || {};
    outage.textContent = `ZooKeeper outage since ${new Date(o.since).toLocaleTimeString()}: ${o.reason}. ` +
      "The state below is the last read, not the current one.";
    outage.hidden = false;
  }
  const byName = {};
  for (const r of state.resources) (byName[r.name] = byName[r.name] || []).push(r);
  const main = el("main");
  main.id = "topology";
  for (const b of state.topology) {
    const g = el("section", "box");
    g.append(el("h2", "", b.name));
    for (const n of b.resources) {
      const card = el("article", "resource");
      card.dataset.resource = n.name;
      card.dataset.kind = n.kind;
      const h = el("h3");
      h.append(el("span", "name", n.name), " ", el("span", "kind", n.kind));
      card.append(h, el("div", "path", n.path));
      if (n.settings && n.settings.length) card.append(el("div", "settings", n.settings.join(" · ")));
      const ins = byName[n.name] || [];
      if (!ins.length) card.append(el("div", "summary muted", "not read yet"));
      for (const r of ins) card.append(instanceBox(r));
      const cut = state.instances_cut && state.instances_cut[n.name];
      if (cut) card.append(el("div", "warn", `${cut} more instances not followed (--max-instances)`));
      g.append(card);
    }
    main.append(g);
  }
  document.getElementById("topology").replaceWith(main);
  tick();
}

function connect() {
  const es = new EventSource("events");
  es.onmessage = (e) => {
    state = JSON.parse(e.data);
    receivedAt = Date.now();
    render();
  };
  es.onerror = () => {
    document.getElementById("status").textContent = "lost zkgen serve; reconnecting…";
  };
}

setInterval(tick, 1000);
connect();
