// Mints one JWT with jose, an implementation independent of lib/token, for
// tests/integration/single/jwks.sh and tests/bench. It only mints (and says
// a key file's public JWK): the keys come from files.
//   node mint-token.mjs KEYFILE ALG KID SUB [CLAIMS_JSON]
//   node mint-token.mjs --count N KEYFILE ALG KID PREFIX
//   node mint-token.mjs --jwk KEYFILE KID
// KEYFILE holds raw bytes as flashsale-admin keys generate writes them: 64
// (a libsodium Ed25519 secret key: seed, then public key) for EdDSA, 32 or
// more (a secret) for HS256; or a PEM private key (openssl genpkey) for
// RS256, PS256, ES256 and ES384. KID "" leaves the header without one. The
// claims are sub, iat = now and exp = now + 600, then CLAIMS_JSON's members
// over them. --count prints N lines "PREFIX-i TOKEN" (i from 1, exp an
// hour ahead), as flashsale-admin token mint --count does; --jwk prints the
// public JWK of a PEM key with that kid.
import { readFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { importJWK, SignJWT } from 'jose';

const args = process.argv.slice(2);
const usage = () => {
  console.error('usage: node mint-token.mjs [--count N] KEYFILE ALG KID SUB [CLAIMS_JSON]\n' +
    '       node mint-token.mjs --jwk KEYFILE KID');
  process.exit(2);
};
const b64 = (buf) => Buffer.from(buf).toString('base64url');
const isPem = (raw) => raw.subarray(0, 11).toString() === '-----BEGIN ';

if (args[0] === '--jwk') {
  const [, keyfile, kid] = args;
  if (!keyfile || !kid)
    usage();
  const jwk = createPublicKey(readFileSync(keyfile)).export({ format: 'jwk' });
  process.stdout.write(JSON.stringify({ kid, ...jwk }) + '\n');
  process.exit(0);
}
let count = 0;
if (args[0] === '--count') {
  count = Number(args[1]);
  args.splice(0, 2);
  if (!Number.isInteger(count) || count < 1)
    usage();
}
const [keyfile, alg, kid, sub, extra] = args;
if (!keyfile || !alg || kid === undefined || !sub)
  usage();
const raw = readFileSync(keyfile);
let key;
if (isPem(raw) && ['RS256', 'PS256', 'ES256', 'ES384'].includes(alg))
  key = createPrivateKey(raw);
else if (alg === 'EdDSA' && raw.length === 64)
  key = await importJWK({ kty: 'OKP', crv: 'Ed25519', d: b64(raw.subarray(0, 32)), x: b64(raw.subarray(32)) }, alg);
else if (alg === 'HS256' && raw.length >= 32)
  key = await importJWK({ kty: 'oct', k: b64(raw) }, alg);
else {
  console.error(`mint-token: ${keyfile}: ${raw.length} bytes are no ${alg} key`);
  process.exit(2);
}
const header = { alg, typ: 'JWT' };
if (kid !== '')
  header.kid = kid;
const now = Math.floor(Date.now() / 1000);
const mint = (s, ttl) => new SignJWT({ sub: s, iat: now, exp: now + ttl, ...(extra ? JSON.parse(extra) : {}) })
  .setProtectedHeader(header).sign(key);
if (count === 0) {
  process.stdout.write(await mint(sub, 600) + '\n');
} else {
  const lines = [];
  for (let i = 1; i <= count; i++)
    lines.push(`${sub}-${i} ${await mint(`${sub}-${i}`, 3600)}`);
  process.stdout.write(lines.join('\n') + '\n');
}
