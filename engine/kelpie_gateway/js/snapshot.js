// Kelpie fixed reader: `tab.snapshot` entry (contract §9). Value-free snapshot; records every returned
// element in the registry (replacing the previous snapshot's nodes) and answers
// {url, title, text, truncated, elements:[{handle, tag, role, label, …}]}.
async function main(P) {
  const read = readDocument(P.maxChars, P.maxElements);
  const reg = registry(true);
  reg.nodes.clear();
  const flags = { truncated: read.truncated };
  const elements = read.picked.map((info) => {
    reg.counter += 1;
    const handle = reg.nonce + "-" + reg.counter.toString(36);
    reg.nodes.set(handle, info.el);
    return Object.assign({ handle }, describe(info, flags));
  });
  return { url: read.url, title: read.title, text: read.text, truncated: flags.truncated, elements };
}
