/*
 * trivial-fcgi: the FastCGI ceiling of tests/bench. It answers every
 * request with the purchase handler's sold-out answer, byte for byte the
 * same headers and body, and does nothing else: what nginx, the socket and
 * libfcgi cost before a handler does any work of its own. Run under
 * spawn-fcgi, which hands it the listening socket as fd 0.
 */
#include "config.h"

#include <fcgiapp.h>

static const char answer[] =
    "Status: 410 Gone\r\n"
    "Content-Type: application/json; charset=utf-8\r\n"
    "Content-Length: 55\r\n"
    "Cache-Control: no-store\r\n"
    "\r\n"
    "{\"error\":\"SOLD_OUT\",\"message\":\"This item is sold out.\"}";

int
main(void)
{
	FCGX_Request req;

	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, 0, 0) != 0)
		return 1;
	/* spawn-fcgi's SIGTERM ends the process inside accept: no cleanup needed. */
	while (FCGX_Accept_r(&req) == 0) {
		FCGX_PutStr(answer, (int)sizeof(answer) - 1, req.out);
		FCGX_Finish_r(&req);
	}
	return 0;
}
