// Swagger UI's configuration (FastAPI's defaults), in a file of its own: the page's
// Content-Security-Policy runs no inline script.
"use strict";

const root = document.getElementById("swagger-ui");
window.ui = SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  domNode: root,
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  // the default sends the schema's address to a validator elsewhere
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
