package handlers

// OpenAPIJSON is the served OpenAPI document, for the tests of package
// handlers_test that validate the API against it.
var OpenAPIJSON = openapiJSON

// CSVSafe is csvSafe, for the audit CSV's test.
var CSVSafe = csvSafe
