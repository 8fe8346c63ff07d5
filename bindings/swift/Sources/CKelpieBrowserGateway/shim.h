/* The C ABI header, found on the include path pkg-config gives (`kelpie-browser-gateway`). */
#include <kelpie/browser_gateway_c_api.h>
