# frozen_string_literal: true

require "active_support/parameter_filter"

module LlmFailover
  module ActiveRecord
    # A column #inspect and pp show as [FILTERED] whatever the app's filter_attributes
    # (which still filter the others): an answer's reasoning state and a call's
    # signature are opaque and their host's alone.
    class HiddenColumn
      def initialize(filter, column)
        @filter = filter
        @column = column
      end

      def filter_param(key, value)
        key.to_s == @column ? ActiveSupport::ParameterFilter::FILTERED : @filter.filter_param(key, value)
      end

      def filter(params)
        @filter.filter(params).tap { |out| out[@column] = ActiveSupport::ParameterFilter::FILTERED if out.key?(@column) }
      end
    end
  end
end
