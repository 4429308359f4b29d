// A loopback HTTP proxy that adds `Authorization: Bearer <token>` to every
// request and forwards it, headers (Host and Origin included) and body as
// they are, to the tools server; answers stream back unchanged. For MCP
// test runners that send no Authorization header (the conformance runner).
//
//   node bearer-proxy.mjs <target-port> <token>
//
// Prints `listening <port>` once ready; exits when stdin closes.
import http from "node:http";

const [targetPort, token] = process.argv.slice(2);
if (!targetPort || !token) {
  console.error("usage: node bearer-proxy.mjs <target-port> <token>");
  process.exit(2);
}

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const upstream = http.request(
    { host: "127.0.0.1", port: Number(targetPort), method: req.method, path: req.url, headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", (e) => {
    res.writeHead(502, { "content-type": "text/plain" });
    res.end(`proxy: ${e.message}\n`);
  });
  req.pipe(upstream);
});

server.listen(0, "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
