# frozen_string_literal: true

require "json"
require_relative "../errors"
require_relative "../version"
require_relative "warnings"

module LlmFailover
  # OpenTelemetry spans, when the app has loaded the opentelemetry-api gem (the gem never
  # requires it, nor depends on it): one span per call, and under it one span per HTTP
  # attempt, with the GenAI semantic conventions.
  #
  #   call span "chat gpt-4o" (internal)   gen_ai.system / gen_ai.request.model (the
  #     primary), gen_ai.response.model and gen_ai.usage.* (the answer's), error.type,
  #     llm_failover.request_id, .attempts, .failover, .cached, .cancelled, .feature;
  #     events: llm_failover.failover (from a target to the next, with the failure that
  #     moved it), llm_failover.circuit_skip (no request: the target's circuit was open),
  #     llm_failover.circuit_change (a circuit this call opened, half-opened or closed)
  #   attempt span "chat <model>" (client), one per request sent: gen_ai.system (the
  #     configured provider's name), gen_ai.request.model, gen_ai.usage.* (what the
  #     provider reported, failed attempts included), error.type, http.response.status_code,
  #     llm_failover.provider_request_id (the provider's id of that request), .attempt
  #
  # The attempt spans are made from the call's attempt records once it ends, with the
  # times the engine measured (started_at, latency_ms): the request itself runs in C.
  # No prompt or answer text is put on a span unless the configuration's trace_content is
  # true (gen_ai.input.messages: what was sent, scrubbed; gen_ai.output.messages).
  # A failure of tracing is logged, never raised: the call goes on.
  module Tracing
    SCOPE = "llm_failover"

    module_function

    # Runs the block (the call) inside a call span when OpenTelemetry is loaded and the
    # app's tracer provider records; otherwise just runs it.
    # @param chat [Chat] the chat making the call
    # @param messages [Array<Array(String, String)>] [role, text] as sent
    # @return what the block returns (a Reply)
    def trace(chat:, messages:, temperature:, max_tokens:, &block)
      return yield unless defined?(::OpenTelemetry::Trace)

      tracer = ::OpenTelemetry.tracer_provider.tracer(SCOPE, VERSION)
      span = start_call(tracer, chat, temperature, max_tokens)
      return yield unless span&.recording?

      run_in(span, tracer, chat, messages, &block)
    end

    # A circuit change during the call, as an event of its span (CircuitBreaker).
    # @param event [CircuitEvent]
    def circuit_change(event)
      return unless defined?(::OpenTelemetry::Trace)

      span = ::OpenTelemetry::Trace.current_span
      return unless span.recording?

      span.add_event("llm_failover.circuit_change",
                     attributes: { "gen_ai.system" => event.provider.to_s, "gen_ai.request.model" => event.model,
                                   "llm_failover.circuit.from" => event.from.to_s,
                                   "llm_failover.circuit.to" => event.to.to_s,
                                   "llm_failover.circuit.reason" => event.reason.to_s }
                                   .merge(event.error_class ? { "error.type" => event.error_class } : {}))
    rescue StandardError => e
      failed(nil, e)
    end

    def start_call(tracer, chat, temperature, max_tokens)
      attributes = { "gen_ai.operation.name" => "chat", "gen_ai.system" => chat.provider.to_s,
                     "gen_ai.request.model" => chat.model }
      attributes["gen_ai.request.temperature"] = temperature.to_f if temperature
      attributes["gen_ai.request.max_tokens"] = max_tokens if max_tokens
      attributes["llm_failover.feature"] = chat.feature if chat.feature
      if chat.backup?
        attributes["llm_failover.backup.system"] = chat.backup_provider.to_s
        attributes["llm_failover.backup.model"] = chat.backup_model
      end
      tracer.start_span("chat #{chat.model}", kind: :internal, attributes: attributes)
    rescue StandardError => e
      failed(chat.config, e)
      nil
    end

    def run_in(span, tracer, chat, messages)
      config = chat.config
      reply = ::OpenTelemetry::Trace.with_span(span) { yield }
      finish(span, tracer, config, reply.attempts, messages) { answered(span, reply, config) }
      reply
    rescue Error => e
      finish(span, tracer, config, e.attempts, messages) { refused(span, e) }
      raise
    rescue Exception => e # rubocop:disable Lint/RescueException -- the span ends however the call does
      finish(span, tracer, config, [], messages) { refused(span, e) }
      raise
    end

    def finish(span, tracer, config, records, messages)
      yield
      span.set_attribute("gen_ai.input.messages", JSON.generate(messages.map { |r, t| { role: r, content: t } })) if config.trace_content
      attempts(span, tracer, records)
    rescue StandardError => e
      failed(config, e)
    ensure
      span.finish
    end

    def answered(span, reply, config)
      span.set_attribute("llm_failover.request_id", reply.request_id) if reply.request_id
      # What the provider says answered: Reply#response_model where Reply has it (the
      # ruby-layout branch makes #model the model asked), #model before that.
      response_model = reply.respond_to?(:response_model) ? reply.response_model : reply.model
      span.set_attribute("gen_ai.response.model", response_model.to_s) if response_model
      span.set_attribute("gen_ai.usage.input_tokens", reply.input_tokens) if reply.input_tokens
      span.set_attribute("gen_ai.usage.output_tokens", reply.output_tokens) if reply.output_tokens
      span.set_attribute("gen_ai.response.finish_reasons", [reply.finish_reason.to_s]) if reply.finish_reason
      span.set_attribute("llm_failover.answered_by", reply.provider.to_s) if reply.provider
      span.set_attribute("llm_failover.failover", reply.failover?)
      span.set_attribute("llm_failover.cached", reply.cached?)
      span.set_attribute("llm_failover.cancelled", reply.cancelled?)
      return unless config.trace_content

      span.set_attribute("gen_ai.output.messages", JSON.generate([{ role: "assistant", content: reply.content.to_s }]))
    end

    def refused(span, error)
      type = error.class.name || "Exception"
      span.set_attribute("error.type", type)
      span.set_attribute("llm_failover.request_id", error.request_id) if error.respond_to?(:request_id) && error.request_id
      # The class only: a provider's error text may quote the prompt back.
      span.status = ::OpenTelemetry::Trace::Status.error(type)
    end

    # One child span per request sent, events on the call span for the decisions.
    def attempts(span, tracer, records)
      records = Array(records)
      span.set_attribute("llm_failover.attempts", records.size)
      parent = ::OpenTelemetry::Trace.context_with_span(span)
      previous = nil
      records.each do |record|
        started = record.started_at
        if previous && [previous.provider, previous.model] != [record.provider, record.model]
          from = "#{previous.provider}/#{previous.model}"
          span.add_event("llm_failover.failover",
                         attributes: { "llm_failover.from" => from, "llm_failover.to" => "#{record.provider}/#{record.model}",
                                       "error.type" => previous.error_class.to_s },
                         timestamp: started)
        end
        previous = record
        if record.skipped?
          skip_event(span, record)
          next
        end
        attempt_span(tracer, parent, record) unless record.cached?
      end
    end

    # A target left out, no request sent: past its open circuit, or because it cannot
    # take the message's attachments (the reason, naming the file and the limit).
    def skip_event(span, record)
      attributes = { "gen_ai.system" => record.provider.to_s, "gen_ai.request.model" => record.model }
      name = "llm_failover.circuit_skip"
      if record.error_class == AttachmentRefusedError.name
        name = "llm_failover.attachment_skip"
        attributes["llm_failover.reason"] = record.error_message.to_s
      end
      span.add_event(name, attributes: attributes, timestamp: record.started_at)
    end

    def attempt_span(tracer, parent, record)
      attributes = { "gen_ai.operation.name" => "chat", "gen_ai.system" => record.provider.to_s,
                     "gen_ai.request.model" => record.model, "llm_failover.request_id" => record.request_id.to_s,
                     "llm_failover.attempt" => record.attempt }
      attributes["llm_failover.provider_request_id"] = record.provider_request_id if record.provider_request_id
      attributes["gen_ai.usage.input_tokens"] = record.input_tokens if record.input_tokens
      attributes["gen_ai.usage.output_tokens"] = record.output_tokens if record.output_tokens
      attributes["http.response.status_code"] = record.http_status if record.http_status
      attributes["llm_failover.first_token_ms"] = record.first_token_ms.to_f if record.first_token_ms
      attributes["llm_failover.retry_after"] = record.retry_after.to_f if record.retry_after
      attributes["llm_failover.cancelled"] = true if record.cancelled?
      attributes["error.type"] = record.error_class.to_s unless record.success?
      started = record.started_at
      span = tracer.start_span("chat #{record.model}", with_parent: parent, kind: :client, attributes: attributes,
                                                      start_timestamp: started)
      span.status = ::OpenTelemetry::Trace::Status.error(record.error_class.to_s) unless record.success? || record.cancelled?
      span.finish(end_timestamp: started && record.latency_ms ? started + (record.latency_ms / 1000.0) : nil)
    end

    def failed(config, error)
      message = "tracing failed (#{error.class}: #{error.message}); the call goes on"
      config ? Warnings.warn(message, logger: config.logger) : Warnings.warn(message)
    end
  end
end
