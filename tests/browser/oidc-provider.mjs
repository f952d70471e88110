// The test suite's OpenID provider: the npm package oidc-provider (OpenID
// Certified) on loopback, run by deploy/stack's part "oidc"
// (deploy/stack.d/oidc.sh). Node runs it as it runs the browser tests;
// nothing of the product depends on it.
//
// - One public client (token_endpoint_auth_method none, PKCE S256
//   required): the sale page, its redirect URI the page's own URL.
// - Test accounts: the provider's own development login page, where any
//   account id of 1-64 letters, digits, '.', '_', '-' signs in (the password
//   is not checked); the consent page follows.
// - The Bearer the page sends is the access token: a JWT (RFC 9068, typ
//   at+jwt) for the one resource server, the shop's API, whose audience is
//   OIDC_AUDIENCE (the handlers' FLASHSALE_JWT_AUDIENCE); iss, sub, exp,
//   iat, jti, client_id, scope. The ID token (aud = the client id) stays
//   with the page, as OpenID Connect means it to.
// - Signing keys: one RSA (RS256, the default) and one P-256 (ES256),
//   generated at the first start into OIDC_KEYS_FILE (0600, never logged).
//   Access tokens are signed RS256 unless the admin port says ES256.
//
// The admin port (OIDC_ADMIN_LISTEN, loopback only, never the issuer's):
//   POST /rotate       a new RSA and a new EC key go first: they sign from
//                      now on; the old ones stay published (verifying only)
//   POST /retire       keeps only the newest key of each type: the rest
//                      disappear from the provider's JWK Set
//   POST /alg/RS256, POST /alg/ES256   the access tokens' signing algorithm
//   POST /ttl/SECONDS  the lifetime of the access tokens issued from now on
//   GET  /keys         the published kids: {"signing":{"RS256":kid,"ES256":kid},"kids":[...]}
// Each change writes the key file (by a rename) and rebuilds the provider
// around the same sessions and grants (the memory adapter is shared).
//
// Environment: OIDC_LISTEN (127.0.0.1:PORT), OIDC_ISSUER (http://HOST:PORT,
// exactly as the discovery document says it), OIDC_CLIENT_ID,
// OIDC_REDIRECT_URIS (space separated), OIDC_AUDIENCE (an absolute URI),
// OIDC_KEYS_FILE, OIDC_ADMIN_LISTEN, OIDC_ACCESS_TOKEN_TTL (seconds, 600),
// OIDC_COOKIE_KEY_FILE (a secret of the stack, for the provider's cookies).
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import Provider, { errors } from 'oidc-provider';

function need(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`oidc-provider: ${name} is not set`);
    process.exit(2);
  }
  return v;
}

function listenAddr(name) {
  const m = /^(127\.[0-9.]+):([0-9]{1,5})$/.exec(need(name));
  if (!m) {
    console.error(`oidc-provider: ${name} must be a loopback address 127.x.y.z:PORT`);
    process.exit(2);
  }
  return { host: m[1], port: Number(m[2]) };
}

const listen = listenAddr('OIDC_LISTEN');
const adminListen = listenAddr('OIDC_ADMIN_LISTEN');
const issuer = need('OIDC_ISSUER');
const clientId = need('OIDC_CLIENT_ID');
const redirectUris = need('OIDC_REDIRECT_URIS').split(/\s+/).filter(Boolean);
const audience = need('OIDC_AUDIENCE');
const keysFile = need('OIDC_KEYS_FILE');
const cookieKey = readFileSync(need('OIDC_COOKIE_KEY_FILE'), 'utf8').trim();
const ttlOk = (s) => Number.isInteger(s) && s >= 10 && s <= 86400;
let accessTtl = Number(process.env.OIDC_ACCESS_TOKEN_TTL || 600);
if (!ttlOk(accessTtl)) {
  console.error('oidc-provider: OIDC_ACCESS_TOKEN_TTL must be 10..86400 seconds');
  process.exit(2);
}
const ACCOUNT = /^[A-Za-z0-9._-]{1,64}$/;

// One new private signing key as a JWK, its kid the key's thumbprint.
async function newKey(alg) {
  const { privateKey } = await generateKeyPair(alg, { extractable: true, modulusLength: 2048 });
  const jwk = await exportJWK(privateKey);
  jwk.kid = `${alg.toLowerCase()}-${(await calculateJwkThumbprint(jwk)).slice(0, 16)}`;
  jwk.alg = alg;
  jwk.use = 'sig';
  return jwk;
}

// The key file, newest keys first; written 0600 by a rename.
function saveKeys(keys) {
  writeFileSync(`${keysFile}.new`, JSON.stringify({ keys }) + '\n', { mode: 0o600 });
  renameSync(`${keysFile}.new`, keysFile);
}

let keys;
if (existsSync(keysFile)) {
  keys = JSON.parse(readFileSync(keysFile, 'utf8')).keys;
} else {
  keys = [await newKey('RS256'), await newKey('ES256')];
  saveKeys(keys);
}
let accessAlg = 'RS256';

function signingKid(alg) {
  return keys.find((k) => k.alg === alg).kid;
}

function build() {
  const provider = new Provider(issuer, {
    clients: [{
      client_id: clientId,
      application_type: 'web',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: redirectUris,
    }],
    jwks: { keys },
    cookies: { keys: [cookieKey] },
    pkce: { required: () => true },
    scopes: ['openid', 'purchase'],
    claims: { openid: ['sub'] },
    findAccount: (ctx, sub) => (ACCOUNT.test(sub) ? { accountId: sub, claims: () => ({ sub }) } : undefined),
    // The page exchanges its code from its own origin: CORS for the
    // origins of the client's redirect URIs only.
    clientBasedCORS: (ctx, origin, client) =>
      client.redirectUris.some((uri) => URL.parse(uri)?.origin === origin),
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => {
          if (resource !== audience)
            throw new errors.InvalidTarget();
          return {
            scope: 'purchase',
            audience,
            accessTokenTTL: accessTtl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: accessAlg } },
          };
        },
      },
    },
    ttl: { AccessToken: accessTtl, IdToken: accessTtl },
  });
  // Loopback http: the provider is told not to expect a TLS proxy.
  provider.proxy = false;
  return provider.callback();
}

let handler = build();
const server = http.createServer((req, res) => handler(req, res));
server.listen(listen.port, listen.host, () => console.log(`oidc-provider: ${issuer} on ${listen.host}:${listen.port}`));

function publicKids() {
  return keys.map((k) => k.kid);
}

// The admin port: rotation and the access tokens' algorithm, for the tests.
const admin = http.createServer(async (req, res) => {
  const answer = (status, body) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body) + '\n');
  };
  try {
    if (req.method === 'GET' && req.url === '/keys')
      return answer(200, { signing: { RS256: signingKid('RS256'), ES256: signingKid('ES256') }, kids: publicKids() });
    if (req.method !== 'POST')
      return answer(405, { error: 'POST only' });
    if (req.url === '/rotate') {
      keys = [await newKey('RS256'), await newKey('ES256'), ...keys];
    } else if (req.url === '/retire') {
      keys = ['RS256', 'ES256'].map((alg) => keys.find((k) => k.alg === alg));
    } else if (req.url === '/alg/RS256' || req.url === '/alg/ES256') {
      accessAlg = req.url.slice(5);
    } else if (/^\/ttl\/[0-9]{1,5}$/.test(req.url) && ttlOk(Number(req.url.slice(5)))) {
      accessTtl = Number(req.url.slice(5));
    } else {
      return answer(404, { error: 'unknown' });
    }
    saveKeys(keys);
    handler = build();
    console.log(`oidc-provider: ${req.url}: kids ${publicKids().join(' ')}, access tokens ${accessAlg} for ${accessTtl} s`);
    return answer(200, { signing: { RS256: signingKid('RS256'), ES256: signingKid('ES256') }, kids: publicKids(), accessAlg, accessTtl });
  } catch (e) {
    console.error(`oidc-provider: ${req.url}: ${e.message}`);
    return answer(500, { error: e.message });
  }
});
admin.listen(adminListen.port, adminListen.host);

for (const sig of ['SIGTERM', 'SIGINT'])
  process.on(sig, () => {
    server.close();
    admin.close();
    process.exit(0);
  });
