/*
Copyright 2025 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package metrics

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/log"

	logutil "sigs.k8s.io/gateway-api-inference-extension/pkg/common/observability/logging"
	fwkdl "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/datalayer"
	fwkplugin "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/plugin"
	sourcemetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/source/metrics"
)

const (

	// --- Internal Keys (for Legacy/Gauge Usage) ---
	KVCacheUsagePercentKey = "KVCacheUsagePercent"
	WaitingQueueSizeKey    = "WaitingQueueSize"
	RunningRequestsSizeKey = "RunningRequestsSize"
	MaxActiveModelsKey     = "MaxActiveModels"
	ActiveModelsKey        = "ActiveModels"
	WaitingModelsKey       = "WaitingModels"
	UpdateTimeKey          = "UpdateTime"

	// LoRA metrics based on MSP
	LoraInfoRunningAdaptersMetricName = "running_lora_adapters"
	LoraInfoWaitingAdaptersMetricName = "waiting_lora_adapters"
	LoraInfoMaxAdaptersMetricName     = "max_lora"

	CacheConfigBlockSizeInfoMetricName = "block_size"
	CacheConfigNumGPUBlocksMetricName  = "num_gpu_blocks"
)

// Extractor implements the metrics extraction based on the model
// server protocol standard.
type Extractor struct {
	typedName      fwkplugin.TypedName
	registry       *MappingRegistry
	engineLabelKey string
}

// NewCoreMetricsExtractor returns a new model server protocol (MSP) metrics extractor,
// configured with the given metrics' registry.
func NewCoreMetricsExtractor(registry *MappingRegistry, engineLabelKey string) (*Extractor, error) {
	if registry == nil {
		return nil, errors.New("mapping registry cannot be nil")
	}
	if engineLabelKey == "" {
		engineLabelKey = DefaultEngineTypeLabelKey
	}
	return &Extractor{
		typedName: fwkplugin.TypedName{
			Type: MetricsExtractorType,
			Name: MetricsExtractorType,
		},
		registry:       registry,
		engineLabelKey: engineLabelKey,
	}, nil
}

// TypedName returns the type and name of the metrics.Extractor.
func (ext *Extractor) TypedName() fwkplugin.TypedName {
	return ext.typedName
}

// ExpectedType defines the type expected by the metrics.Extractor - a
// parsed output from a Prometheus metrics endpoint.
func (ext *Extractor) ExpectedInputType() reflect.Type {
	return sourcemetrics.PrometheusMetricType
}

// Extract transforms the data source output into a concrete attribute that
// is stored on the given endpoint.
func (ext *Extractor) Extract(ctx context.Context, data any, ep fwkdl.Endpoint) error {
	families, ok := data.(sourcemetrics.PrometheusMetricMap)
	if !ok {
		return fmt.Errorf("unexpected input in Extract: %T", data)
	}

	engineType := getEngineTypeFromEndpoint(ep, ext.engineLabelKey)
	mapping, ok := ext.registry.Get(engineType)
	if !ok {
		return fmt.Errorf("no mapping found for engine type %q and no default mapping registered", engineType)
	}

	var errs []error
	current := ep.GetMetrics()
	clone := current.Clone()
	updated := false

	if spec := mapping.TotalQueuedRequests; spec != nil { // extract queued requests
		if metric, err := spec.getLatestMetric(families); err != nil {
			errs = append(errs, err)
		} else {
			clone.WaitingQueueSize = int(extractValue(metric))
			updated = true
		}
	}

	if spec := mapping.TotalRunningRequests; spec != nil { // extract running requests
		if metric, err := spec.getLatestMetric(families); err != nil {
			errs = append(errs, err)
		} else {
			clone.RunningRequestsSize = int(extractValue(metric))
			updated = true
		}
	}

	if spec := mapping.KVCacheUtilization; spec != nil { // extract KV cache usage
		if metric, err := spec.getLatestMetric(families); err != nil {
			errs = append(errs, err)
		} else {
			clone.KVCacheUsagePercent = extractValue(metric)
			updated = true
		}
	}

	if spec := mapping.LoraRequestInfo; spec != nil { // extract LoRA-specific metrics
		metric, err := spec.getLatestMetric(families)
		if err != nil {
			errs = append(errs, err)
		} else if metric != nil {
			populateLoRAMetrics(clone, metric, &errs)
			updated = true
		}
	}

	if spec := mapping.CacheInfo; spec != nil { // extract CacheInfo-specific metrics (labels)
		metric, err := spec.getLatestMetric(families)
		if err != nil {
			errs = append(errs, err)
		} else if metric != nil {
			blockSizeLabel := mapping.CacheBlockSizeLabel
			if blockSizeLabel == "" {
				blockSizeLabel = CacheConfigBlockSizeInfoMetricName
			}
			numBlocksLabel := mapping.CacheNumBlocksLabel
			if numBlocksLabel == "" {
				numBlocksLabel = CacheConfigNumGPUBlocksMetricName
			}
			populateCacheInfoMetrics(clone, metric, blockSizeLabel, numBlocksLabel, &errs)
			updated = true
		}
	}

	if spec := mapping.CacheBlockSize; spec != nil { // extract block size as direct gauge value
		if metric, err := spec.getLatestMetric(families); err != nil {
			errs = append(errs, err)
		} else {
			clone.CacheBlockSize = int(extractValue(metric))
			updated = true
		}
	}

	if spec := mapping.CacheNumBlocks; spec != nil { // extract num GPU blocks as direct gauge value
		if metric, err := spec.getLatestMetric(families); err != nil {
			errs = append(errs, err)
		} else {
			clone.CacheNumBlocks = int(extractValue(metric))
			updated = true
		}
	}

	logger := log.FromContext(ctx).WithValues("endpoint", ep.GetMetadata().NamespacedName)
	if updated {
		clone.UpdateTime = time.Now()
		logger.V(logutil.TRACE).Info("Refreshed metrics", "updated", clone)
		ep.UpdateMetrics(clone)
	}

	if len(errs) != 0 {
		return errors.Join(errs...)
	}
	return nil
}

// getEngineTypeFromEndpoint extracts the engine type from endpoint metadata labels.
func getEngineTypeFromEndpoint(ep fwkdl.Endpoint, labelKey string) string {
	meta := ep.GetMetadata()
	if meta == nil || meta.Labels == nil {
		return DefaultEngineType
	}

	engineType, ok := meta.Labels[labelKey]
	if !ok || engineType == "" {
		return DefaultEngineType
	}

	return engineType
}

// populateLoRAMetrics updates the metrics with LoRA adapter info from the metric labels.
func populateLoRAMetrics(clone *fwkdl.Metrics, metric *dto.Metric, errs *[]error) {
	clone.ActiveModels = map[string]int{}
	clone.WaitingModels = map[string]int{}

	for _, label := range metric.GetLabel() {
		switch label.GetName() {
		case LoraInfoRunningAdaptersMetricName:
			addAdapters(clone.ActiveModels, label.GetValue())
		case LoraInfoWaitingAdaptersMetricName:
			addAdapters(clone.WaitingModels, label.GetValue())
		case LoraInfoMaxAdaptersMetricName:
			if label.GetValue() != "" {
				if val, err := strconv.Atoi(label.GetValue()); err == nil {
					clone.MaxActiveModels = val
				} else {
					*errs = append(*errs, err)
				}
			}
		}
	}
}

// populateCacheInfoMetrics updates the metrics with cache info from the metric labels.
// blockSizeLabelName and numBlocksLabelName allow engines to use different label names
// (e.g. SGLang uses "page_size" and "num_pages" instead of "block_size" and "num_gpu_blocks").
func populateCacheInfoMetrics(clone *fwkdl.Metrics, metric *dto.Metric, blockSizeLabelName, numBlocksLabelName string, errs *[]error) {
	clone.CacheBlockSize = 0
	for _, label := range metric.GetLabel() {
		switch label.GetName() {
		case blockSizeLabelName:
			if label.GetValue() != "" {
				if val, err := strconv.Atoi(label.GetValue()); err == nil {
					clone.CacheBlockSize = val
				} else {
					*errs = append(*errs, err)
				}
			}
		case numBlocksLabelName:
			if label.GetValue() != "" {
				if val, err := strconv.Atoi(label.GetValue()); err == nil {
					clone.CacheNumBlocks = val
				} else {
					*errs = append(*errs, err)
				}
			}
		}
	}
}

// addAdapters splits a comma-separated adapter list and stores keys with default value 0.
func addAdapters(m map[string]int, csv string) {
	for name := range strings.SplitSeq(csv, ",") {
		if trimmed := strings.TrimSpace(name); trimmed != "" {
			m[trimmed] = 0
		}
	}
}
