# frozen_string_literal: true

require_relative "attachments/attachment"
require_relative "attachments/download"
require_relative "attachments/mime"
require_relative "attachments/selection"
