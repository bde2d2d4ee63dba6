package main

import (
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/io/gocloud"
	_ "github.com/apache/iceberg-go/table"
	_ "github.com/hashicorp/memberlist"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "go.uber.org/zap"
	_ "modernc.org/sqlite"
)

func main() {}
